package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"vitbench/bench/results"
)

// exitWrite is the exit status of a command whose results could not all be written to the
// files asked for: they are then in a fallback file (or on stdout), named on stderr.
const exitWrite = 3

// writeFailure is the error of a result file that could not be written. The results it
// was to hold are in fallback (a file, or "stdout"), unless that failed too (fallback "").
type writeFailure struct {
	path, fallback string
	err            error
}

func (e writeFailure) Error() string {
	switch e.fallback {
	case "":
		return fmt.Sprintf("writing %s: %v; the results could not be kept anywhere else either", e.path, e.err)
	case "stdout":
		return fmt.Sprintf("writing %s: %v; the results were written to stdout instead", e.path, e.err)
	}
	return fmt.Sprintf("writing %s: %v; the results are kept in %s", e.path, e.err, e.fallback)
}

func (e writeFailure) Unwrap() error { return e.err }

// isWriteFailure reports whether err holds a writeFailure (exit status 3).
func isWriteFailure(err error) bool {
	var wf writeFailure
	return errors.As(err, &wf)
}

// checkOutputs checks, before any work starts, every output path a command was given
// (flag name -> path; empty paths are skipped): each must be writable where it is, and not
// a directory. The error is a usage error naming the flag, the path and the problem.
func checkOutputs(paths ...string) error {
	for i := 0; i+1 < len(paths); i += 2 {
		flag, p := paths[i], paths[i+1]
		if p == "" {
			continue
		}
		if err := results.CheckOutput(p); err != nil {
			return usagef("%s: %v (checked before running, so that no result is lost)", flag, err)
		}
	}
	return nil
}

// saveResult writes render's output to path atomically (results.WriteFileAtomic). When
// that fails, the content is kept in a fallback file in the temporary directory
// ($TMPDIR), named vitbench-<name>-<random>, or, when that fails too, written to stdout;
// the returned writeFailure says where.
func saveResult(path string, render func(io.Writer) error, stdout io.Writer) error {
	err := results.WriteFileAtomic(path, render)
	if err == nil {
		return nil
	}
	var buf bytes.Buffer
	if rerr := render(&buf); rerr != nil {
		return writeFailure{path: path, err: err}
	}
	base := strings.Map(func(r rune) rune {
		if r == '/' || r < ' ' {
			return '_'
		}
		return r
	}, filepath.Base(path))
	if f, ferr := os.CreateTemp("", "vitbench-"+base+"-*"); ferr == nil {
		_, werr := f.Write(buf.Bytes())
		cerr := f.Close()
		if werr == nil && cerr == nil {
			return writeFailure{path: path, fallback: f.Name(), err: err}
		}
		os.Remove(f.Name())
	}
	if stdout != nil {
		if _, werr := stdout.Write(buf.Bytes()); werr == nil {
			return writeFailure{path: path, fallback: "stdout", err: err}
		}
	}
	return writeFailure{path: path, err: err}
}
