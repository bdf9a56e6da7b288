package results

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"vitbench/bench/safeio"
)

// target is how an output path is written: replaced atomically (path is then the regular
// file, or the place for a new one, at the end of any symlinks), or written in place (a
// device, a FIFO, a terminal, /dev/stdout: something a rename would destroy).
type target struct {
	path    string
	inPlace bool
}

// maxLinks bounds the symlinks followed when resolving an output path.
const maxLinks = 40

// resolveTarget decides how path is written. A directory, a dangling symlink and a
// missing parent directory are errors. A symlink is followed hop by hop: one that passes
// through /proc or /dev (/dev/stdout -> /proc/self/fd/1) is written in place, since its
// final file is whatever the process's descriptor is; one that ends at a regular file
// has that file replaced, so the link itself survives.
func resolveTarget(path string) (target, error) {
	p := path
	for hops := 0; ; hops++ {
		lst, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if p != path {
				return target{}, fmt.Errorf("%s: dangling symlink (-> %s, which does not exist)", path, p)
			}
			dir := filepath.Dir(p)
			st, err := os.Stat(dir)
			if err != nil {
				return target{}, fmt.Errorf("%s: the directory %s: %v", path, dir, safeio.Explain(dir, err))
			}
			if !st.IsDir() {
				return target{}, fmt.Errorf("%s: %s is not a directory", path, dir)
			}
			return target{path: p}, nil
		case err != nil:
			var pe *fs.PathError
			if errors.As(err, &pe) && !errors.Is(err, syscall.ELOOP) {
				return target{}, fmt.Errorf("%s: %v", path, pe.Err)
			}
			return target{}, safeio.Explain(path, err)
		case lst.Mode()&fs.ModeSymlink != 0:
			if hops >= maxLinks {
				return target{}, fmt.Errorf("%s: symlink loop (too many levels of symbolic links)", path)
			}
			dest, err := os.Readlink(p)
			if err != nil {
				return target{}, fmt.Errorf("%s: %v", path, err)
			}
			if !filepath.IsAbs(dest) {
				dest = filepath.Join(filepath.Dir(p), dest)
			}
			if special(dest) {
				st, err := os.Stat(path)
				if err == nil && st.IsDir() {
					return target{}, fmt.Errorf("%s: a directory, not a file", path)
				}
				return target{path: path, inPlace: true}, nil
			}
			p = dest
		case lst.IsDir():
			return target{}, fmt.Errorf("%s: a directory, not a file", path)
		case lst.Mode().IsRegular():
			return target{path: p}, nil
		default:
			return target{path: path, inPlace: true}, nil
		}
	}
}

// special reports whether path lies under /proc or /dev, whose links name descriptors and
// devices rather than files.
func special(path string) bool {
	clean := filepath.Clean(path)
	for _, root := range []string{"/proc", "/dev"} {
		if clean == root || strings.HasPrefix(clean, root+"/") {
			return true
		}
	}
	return false
}

// CheckOutput checks, before any work is done, that path can be written: it is not a
// directory, its directory exists, and a file can be created there (for an atomic
// replace) or the special file it names is writable (for a write in place). The error
// names path and the problem.
func CheckOutput(path string) error {
	if path == "" {
		return errors.New("empty file name")
	}
	t, err := resolveTarget(path)
	if err != nil {
		return err
	}
	if t.inPlace {
		if err := syscall.Access(path, 2 /* W_OK */); err != nil {
			return fmt.Errorf("%s: not writable: %v", path, err)
		}
		return nil
	}
	dir := filepath.Dir(t.path)
	probe, err := os.CreateTemp(dir, ".vitbench-probe-*")
	if err != nil {
		return fmt.Errorf("%s: cannot create a file in %s: %v", path, dir, errors.Unwrap(err))
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}

// WriteFileAtomic writes path through write so that path holds either its old content or
// the complete new content, never a partial file: write fills a temporary file in the same
// directory, which is flushed, fsynced and renamed over path. On any error the temporary
// file is removed and path is left untouched. The new file keeps the mode of the file it
// replaces (0644 for a new file).
//
// Only a regular file (or a new one) is replaced. A symlink to a regular file has its
// target replaced and stays a symlink. A device, a FIFO, a socket or a link through /proc
// or /dev (/dev/null, /dev/stdout) is written in place, never renamed over: the content
// is rendered into memory first, so a failing write leaves such a target untouched. A
// directory is an error.
func WriteFileAtomic(path string, write func(w io.Writer) error) (err error) {
	t, err := resolveTarget(path)
	if err != nil {
		return err
	}
	if t.inPlace {
		return writeInPlace(path, write)
	}
	path = t.path
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	mode := os.FileMode(0o644)
	if st, statErr := os.Stat(path); statErr == nil {
		mode = st.Mode().Perm()
	}
	bw := bufio.NewWriter(tmp)
	if err = write(bw); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = tmp.Chmod(mode); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	// Persist the rename itself; some file systems cannot sync a directory, which is harmless.
	if d, dirErr := os.Open(dir); dirErr == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// writeInPlace renders write into memory, then writes it to the existing special file at
// path, opened without creating or truncating anything; in append mode, so that a
// /dev/stdout redirected to a file adds to it instead of overwriting what is there. The
// open never blocks: a FIFO without a reader is waited for (fifoWait) and then an error.
func writeInPlace(path string, write func(w io.Writer) error) error {
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	f, err := openSpecial(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// fifoWait is how long writeInPlace waits for a FIFO's reader to appear.
const fifoWait = 2 * time.Second

// openSpecial opens the special file at path for writing without blocking (O_NONBLOCK; the
// file then waits for readiness in Go's poller instead of in open). A FIFO nobody reads
// (ENXIO) is tried again until fifoWait has passed.
func openSpecial(path string) (*os.File, error) {
	deadline := time.Now().Add(fifoWait)
	for {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.ENXIO) {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: a FIFO nobody reads (waited %v for a reader)", path, fifoWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
