// Package safeio opens the files vitbench reads (fixtures, manifests,
// weights, result and peak files) so that a hostile path can neither hang
// nor flood the reader: only regular files are read, the type is checked
// before opening (no open of a device or FIFO, which may block or have side
// effects) and again on the opened descriptor, and sizes are taken from the
// descriptor, not from the name.
package safeio

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// NotRegularError is the error for a path that exists but is not a regular
// file: a FIFO, a device, a socket or a directory.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s: %s, not a regular file (vitbench reads only regular files)", e.Path, Kind(e.Mode))
}

// Kind names the type of a file mode: "a FIFO", "a character device", ...
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m&fs.ModeDir != 0:
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "a special file"
}

// Explain turns the error of a stat or open of path into a message that
// names path and says what is wrong: a symlink loop, a dangling symlink,
// a missing file. Other errors are returned as they are.
func Explain(path string, err error) error {
	if err == nil {
		return nil
	}
	var nr *NotRegularError
	if errors.As(err, &nr) {
		return err
	}
	switch {
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("%s: symlink loop (too many levels of symbolic links)", path)
	case errors.Is(err, fs.ErrNotExist):
		if lst, lerr := os.Lstat(path); lerr == nil && lst.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(path)
			return fmt.Errorf("%s: dangling symlink (-> %s, which does not exist)", path, target)
		}
	}
	return err
}

// Exists reports whether something is at path. A name that is there but
// cannot be followed (a symlink loop, a dangling symlink, no permission on
// the way) is reported as existing, with the explained error, so that it
// is not mistaken for a missing file.
func Exists(path string) (bool, error) {
	if _, err := os.Lstat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, Explain(path, err)
	}
	if _, err := os.Stat(path); err != nil {
		return true, Explain(path, err)
	}
	return true, nil
}

// Open opens the regular file at path for reading and returns it with its
// metadata from the opened descriptor. Anything else is refused with an
// error naming path and what it is (a NotRegularError): the type is checked
// before the open, so a FIFO or a device is never opened, and again on the
// descriptor (opened with O_NONBLOCK, so that a swap to a FIFO cannot
// block), which must be the file that was checked. Symlinks are followed;
// callers that confine them resolve the path first.
func Open(path string) (*os.File, fs.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, Explain(path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, nil, &NotRegularError{Path: path, Mode: st.Mode()}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, Explain(path, err)
	}
	fst, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fst.Mode().IsRegular() {
		f.Close()
		return nil, nil, &NotRegularError{Path: path, Mode: fst.Mode()}
	}
	if !os.SameFile(st, fst) {
		f.Close()
		return nil, nil, fmt.Errorf("%s: the file changed while it was opened", path)
	}
	return f, fst, nil
}

// TooLargeError is the error for a file larger than the reader accepts.
type TooLargeError struct {
	Path      string
	Size, Max int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: %d bytes, more than the %d-byte limit for this kind of file", e.Path, e.Size, e.Max)
}

// ReadFile reads the whole regular file at path (see Open), refusing one
// larger than max bytes: the size is checked on the opened descriptor and
// the read stops after max+1 bytes, so a file that grows while it is read
// (or reports a wrong size) is refused as well.
func ReadFile(path string, max int64) ([]byte, error) {
	f, st, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > max {
		return nil, &TooLargeError{Path: path, Size: st.Size(), Max: max}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if int64(len(data)) > max {
		return nil, &TooLargeError{Path: path, Size: int64(len(data)), Max: max}
	}
	return data, nil
}
