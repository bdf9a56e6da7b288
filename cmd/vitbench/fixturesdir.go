package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
)

// defaultFixtures is the -fixtures default: resolved by resolveFixtures, not taken as is.
const defaultFixtures = "fixtures"

// fixturesFlag returns the fixture directory a command should read: -fixtures as given when
// it was on the command line, else resolveFixtures' choice for the default.
func fixturesFlag(fs *flag.FlagSet, dir string) (string, error) {
	if flagSet(fs, "fixtures") {
		return dir, nil
	}
	exe, err := os.Executable()
	if err == nil {
		if real, rerr := filepath.EvalSymlinks(exe); rerr == nil {
			exe = real
		}
	}
	return resolveFixtures(exe)
}

// resolveFixtures finds the default fixture directory: ./fixtures when it exists; else
// fixtures/ next to the executable exe; else the first directory above exe's that holds
// fixtures/MANIFEST.sha256 (a repository root); a directory found there is returned with
// its symlinks resolved, as the tree walk needs. When none is found, the error says where
// it looked and how to name one with -fixtures.
func resolveFixtures(exe string) (string, error) {
	if isDir(defaultFixtures) {
		return defaultFixtures, nil
	}
	looked := []string{"./fixtures"}
	if wd, err := os.Getwd(); err == nil {
		looked[0] = filepath.Join(wd, defaultFixtures)
	}
	if exe != "" {
		dir := filepath.Dir(exe)
		next := filepath.Join(dir, defaultFixtures)
		if isDir(next) {
			return realPath(next), nil
		}
		looked = append(looked, next)
		for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
			cand := filepath.Join(d, defaultFixtures)
			if isFile(filepath.Join(cand, "MANIFEST.sha256")) {
				return realPath(cand), nil
			}
			looked = append(looked, filepath.Join(cand, "MANIFEST.sha256"))
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	return "", usagef("no fixture directory found: looked for %s; pass -fixtures DIR (a tree in the format of fixtures/FORMAT.md, e.g. the repository's fixtures/)",
		strings.Join(looked, ", "))
}

// torchScriptFlag returns the PyTorch timing script `run` should start: -torch-script as
// given when it was on the command line or exists, else reference/bench_torch.py of the
// repository whose fixtures were found (fixtures' parent directory), when it is there.
func torchScriptFlag(fs *flag.FlagSet, script, fixtures string) string {
	if flagSet(fs, "torch-script") || isFile(script) {
		return script
	}
	if cand := filepath.Join(filepath.Dir(filepath.Clean(fixtures)), "reference", "bench_torch.py"); isFile(cand) {
		return cand
	}
	return script
}

// isDir reports whether p is a directory (following symlinks).
func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// isFile reports whether p is a regular file (following symlinks).
func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// realPath returns p with its symlinks resolved, or p when that fails.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}
