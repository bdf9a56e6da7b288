package results

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestWriteFileAtomic(t *testing.T) {
	errWrite := errors.New("disk full")
	tests := []struct {
		name     string
		old      string // "" = no existing file
		write    func(w io.Writer) error
		wantErr  bool
		wantFile string // "" = must not exist
	}{
		{name: "new file", write: writeThen("hello\n", nil), wantFile: "hello\n"},
		{name: "replace", old: "old\n", write: writeThen("new\n", nil), wantFile: "new\n"},
		{name: "failure keeps old", old: "old\n", write: writeThen("partial", errWrite), wantErr: true, wantFile: "old\n"},
		{name: "failure creates nothing", write: writeThen("partial", errWrite), wantErr: true},
		{name: "large partial write keeps old", old: "old\n", write: writeThen(string(make([]byte, 1<<20)), errWrite), wantErr: true, wantFile: "old\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "out.txt")
			if tt.old != "" {
				if err := os.WriteFile(path, []byte(tt.old), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := WriteFileAtomic(path, tt.write)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr && !errors.Is(err, errWrite) {
				t.Errorf("err = %v, want the writer's error", err)
			}
			data, readErr := os.ReadFile(path)
			switch {
			case tt.wantFile == "" && !os.IsNotExist(readErr):
				t.Errorf("target exists (%q, %v), want none", data, readErr)
			case tt.wantFile != "" && string(data) != tt.wantFile:
				t.Errorf("target = %q (%v), want %q", data, readErr, tt.wantFile)
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if e.Name() != "out.txt" {
					t.Errorf("left behind %s", e.Name())
				}
			}
			if tt.old != "" && !tt.wantErr {
				if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
					t.Errorf("mode %v, want the replaced file's 0600", st.Mode().Perm())
				}
			}
		})
	}
}

func writeThen(s string, err error) func(w io.Writer) error {
	return func(w io.Writer) error {
		if _, werr := io.WriteString(w, s); werr != nil {
			return werr
		}
		return err
	}
}

func TestWriteFileAtomicMissingDir(t *testing.T) {
	err := WriteFileAtomic(filepath.Join(t.TempDir(), "no", "such", "out.txt"), writeThen("x", nil))
	if err == nil {
		t.Errorf("writing into a missing directory succeeded")
	}
}

// TestWriteFileAtomicSpecialTargets: a FIFO, a symlink to one, and a symlink through /dev
// are written in place and keep their type; a symlink to a regular file has its target
// replaced and stays a symlink; a directory is an error, and CheckOutput says so first.
func TestWriteFileAtomicSpecialTargets(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		raw, _ := os.ReadFile(fifo) // blocks until the writer has opened and closed it
		got <- string(raw)
	}()
	if err := CheckOutput(fifo); err != nil {
		t.Errorf("CheckOutput(FIFO): %v", err)
	}
	if err := WriteFileAtomic(fifo, writeThen("through the pipe\n", nil)); err != nil {
		t.Fatalf("FIFO: %v", err)
	}
	select {
	case s := <-got:
		if s != "through the pipe\n" {
			t.Errorf("the FIFO's reader got %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("nothing was written into the FIFO")
		os.WriteFile(fifo, nil, 0) // releases the reader, if the FIFO is still there
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", st.Mode(), err)
	}

	// A FIFO nobody reads is an error after a short wait, not a hang.
	lonely := filepath.Join(dir, "lonely")
	if err := syscall.Mkfifo(lonely, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- WriteFileAtomic(lonely, writeThen("x", nil)) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "nobody reads") {
			t.Errorf("a FIFO without a reader: %v", err)
		}
	case <-time.After(3 * fifoWait):
		t.Fatalf("writing a FIFO without a reader blocked")
	}

	devLink := filepath.Join(dir, "null-link")
	if err := os.Symlink("/dev/null", devLink); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(devLink, writeThen("gone\n", nil)); err != nil {
		t.Fatalf("symlink to /dev/null: %v", err)
	}
	if st, err := os.Lstat(devLink); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink to /dev/null was replaced by a %v (%v)", st.Mode(), err)
	}

	real := filepath.Join(dir, "real.txt")
	os.WriteFile(real, []byte("old\n"), 0o644)
	link := filepath.Join(dir, "link.txt")
	if err := os.Symlink("real.txt", link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(link, writeThen("new\n", nil)); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Lstat(link); st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced by a regular file")
	}
	if raw, _ := os.ReadFile(real); string(raw) != "new\n" {
		t.Errorf("the link's target holds %q, want the new content", raw)
	}

	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	if err := CheckOutput(sub); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("CheckOutput(directory) = %v", err)
	}
	if err := WriteFileAtomic(sub, writeThen("x", nil)); err == nil {
		t.Errorf("writing over a directory succeeded")
	}
	for _, bad := range []string{filepath.Join(dir, "no", "such", "x.json"), filepath.Join(real, "x.json")} {
		if err := CheckOutput(bad); err == nil {
			t.Errorf("CheckOutput(%s) accepted a path whose directory does not exist", bad)
		}
	}
	dangling := filepath.Join(dir, "dangling")
	os.Symlink("nowhere/x", dangling)
	if err := CheckOutput(dangling); err == nil || !strings.Contains(err.Error(), "dangling") {
		t.Errorf("CheckOutput(dangling symlink) = %v", err)
	}
}
