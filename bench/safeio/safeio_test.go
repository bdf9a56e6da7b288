package safeio

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpenRefusesSpecialFiles: a FIFO (which would block an ordinary open), a device, a
// socket and a directory are each refused at once with an error naming the path and what
// it is; a regular file, also through a symlink, opens.
func TestOpenRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	link := filepath.Join(dir, "zero-link")
	os.Symlink("/dev/zero", link)
	regular := filepath.Join(dir, "a.txt")
	os.WriteFile(regular, []byte("hello"), 0o644)
	regLink := filepath.Join(dir, "a-link")
	os.Symlink("a.txt", regLink)

	for _, c := range []struct{ path, want string }{
		{fifo, "FIFO"}, {"/dev/zero", "character device"}, {link, "character device"}, {sock, "socket"}, {dir, "directory"},
	} {
		done := make(chan error, 1)
		go func() { _, err := ReadFile(c.path, 1<<20); done <- err }()
		select {
		case err := <-done:
			var nr *NotRegularError
			if !errors.As(err, &nr) || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: error %v, want a NotRegularError naming it as %s", c.path, err, c.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: ReadFile blocked", c.path)
		}
	}
	for _, p := range []string{regular, regLink} {
		raw, err := ReadFile(p, 1<<20)
		if err != nil || string(raw) != "hello" {
			t.Errorf("%s: %q, %v", p, raw, err)
		}
	}
	if _, err := ReadFile(regular, 4); err == nil || !strings.Contains(err.Error(), "4-byte limit") {
		t.Errorf("a 5-byte file under a 4-byte limit: %v", err)
	}
}

// TestExplainLinks: a symlink loop and a dangling symlink exist (they are not mistaken for
// missing files) and their errors say what they are.
func TestExplainLinks(t *testing.T) {
	dir := t.TempDir()
	loop := filepath.Join(dir, "loop")
	os.Symlink("loop", loop)
	dangling := filepath.Join(dir, "dangling")
	os.Symlink("nowhere", dangling)
	for _, c := range []struct{ path, want string }{{loop, "symlink loop"}, {dangling, "dangling symlink"}} {
		ok, err := Exists(c.path)
		if !ok || err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("Exists(%s) = %v, %v; want true and an error saying %q", c.path, ok, err, c.want)
		}
		if _, _, err := Open(c.path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%s) = %v, want %q", c.path, err, c.want)
		}
	}
	if ok, err := Exists(filepath.Join(dir, "missing")); ok || err != nil {
		t.Errorf("Exists(missing) = %v, %v", ok, err)
	}
}
