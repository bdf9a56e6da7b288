package results

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
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
