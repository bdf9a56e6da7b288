package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// mkdirs creates each directory under root and returns root.
func mkdirs(t *testing.T, root string, dirs ...string) string {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestResolveFixtures: ./fixtures first, then fixtures/ next to the executable, then the
// first directory above it with fixtures/MANIFEST.sha256; otherwise an error naming where
// it looked and -fixtures.
func TestResolveFixtures(t *testing.T) {
	root := mkdirs(t, t.TempDir(), "repo/fixtures", "repo/bin/deep", "beside/fixtures", "elsewhere", "cwd/fixtures", "nomanifest/fixtures", "nomanifest/bin")
	if err := os.WriteFile(filepath.Join(root, "repo/fixtures/MANIFEST.sha256"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(root, "cwd"))
	if got, err := resolveFixtures(filepath.Join(root, "repo/bin/deep/vitbench")); err != nil || got != "fixtures" {
		t.Errorf("with ./fixtures: %q, %v; want fixtures", got, err)
	}
	t.Chdir(filepath.Join(root, "elsewhere"))
	for _, tt := range []struct{ exe, want string }{
		{"beside/vitbench", "beside/fixtures"},
		{"repo/bin/deep/vitbench", "repo/fixtures"},
		{"repo/bin/vitbench", "repo/fixtures"},
	} {
		got, err := resolveFixtures(filepath.Join(root, tt.exe))
		if want := filepath.Join(root, tt.want); err != nil || got != want {
			t.Errorf("executable %s: %q, %v; want %s", tt.exe, got, err, want)
		}
	}
	// fixtures/ without a manifest above the executable is not a repository root.
	_, err := resolveFixtures(filepath.Join(root, "nomanifest/bin/vitbench"))
	var ue usageError
	if err == nil || !errors.As(err, &ue) {
		t.Fatalf("nothing to find: error %v, want a usage error", err)
	}
	for _, want := range []string{filepath.Join(root, "elsewhere", "fixtures"), filepath.Join(root, "nomanifest/bin/fixtures"),
		filepath.Join(root, "nomanifest/fixtures/MANIFEST.sha256"), "-fixtures DIR"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// TestStandaloneBinary: the built binary, run from a directory without fixtures, finds
// the repository's fixtures above its own location; a binary outside any repository fails
// with exit 2 and says where it looked, not with "stat fixtures".
func TestStandaloneBinary(t *testing.T) {
	bin := buildCLI(t)
	fixtures, err := filepath.Abs(fixtureRoot)
	if err != nil {
		t.Fatal(err)
	}
	repo := mkdirs(t, t.TempDir(), "bin")
	if err := os.Symlink(fixtures, filepath.Join(repo, "fixtures")); err != nil {
		t.Fatal(err)
	}
	inRepo := filepath.Join(repo, "bin", "vitbench")
	if err := os.Rename(bin, inRepo); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	cmd := exec.Command(inRepo, "check", "-run", "^layernorm/odd_b2_d147$")
	cmd.Dir = elsewhere
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "layernorm/odd_b2_d147") {
		t.Errorf("check from %s with the binary in a repository: %v\n%s", elsewhere, err, out)
	}
	alone := filepath.Join(t.TempDir(), "vitbench")
	if err := os.Rename(inRepo, alone); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(alone, "check", "-run", "^layernorm/odd_b2_d147$")
	cmd.Dir = elsewhere
	out, err = cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || !strings.Contains(string(out), "no fixture directory found") ||
		!strings.Contains(string(out), "-fixtures DIR") || strings.Contains(string(out), "stat fixtures") {
		t.Errorf("check with a binary outside any repository: %v, want exit 2 naming where it looked\n%s", err, out)
	}
}
