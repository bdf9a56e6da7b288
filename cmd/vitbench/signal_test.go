package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"vitbench/bench/cases"
	"vitbench/bench/results"
)

// buildCLI builds the vitbench binary into a temporary directory.
func buildCLI(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool on PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "vitbench")
	out, err := exec.Command(goTool, "build", "-o", bin, "vitbench/cmd/vitbench").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// resultLine matches a progress line of a finished case: "[ 1/7 0m05s ETA
// 0m31s] ..." when the number of cases is known, "[   1.2s] ..." otherwise.
var resultLine = regexp.MustCompile(`^\[(\s*\d+/\d+ \S+ ETA \S+|\s*\d+\.\ds)\] `)

// interruptAfterFirstResult runs the binary with args in dir, sends sig as
// soon as the first finished case is reported on stderr, and returns the
// exit code, stdout and stderr.
func interruptAfterFirstResult(t *testing.T, bin, dir string, sig os.Signal, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var stderr strings.Builder
	first := make(chan struct{})
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		once := sync.Once{}
		for sc.Scan() {
			mu.Lock()
			stderr.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if resultLine.MatchString(sc.Text()) {
				once.Do(func() { close(first) })
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case <-first:
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatalf("signal: %v", err)
		}
	case <-scanned:
		cmd.Wait()
		t.Fatalf("%v exited before reporting a case:\n%s", args, stderr.String())
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		<-scanned
		cmd.Wait()
		t.Fatalf("%v reported no case within 2 minutes:\n%s", args, stderr.String())
	}
	<-scanned
	err = cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// dirNames lists a directory's entries, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// TestInterruptBench: SIGINT during `bench` keeps the finished cases, writes
// both files atomically (no temporary files left), says how many cases were
// left, and exits 130.
func TestInterruptBench(t *testing.T) {
	bin := buildCLI(t)
	const runRE = "^soft_split/"
	total := len(cases.Match(regexp.MustCompile(runRE)))
	if total < 3 {
		t.Fatalf("only %d cases match %s", total, runRE)
	}
	out := t.TempDir()
	txt, js := filepath.Join(out, "bench.txt"), filepath.Join(out, "bench.json")
	code, stdout, stderr := interruptAfterFirstResult(t, bin, out, os.Interrupt,
		"bench", "-count", "200", "-min-sample", "20ms", "-run", runRE, "-o", txt, "-json", js)
	if code != 130 {
		t.Fatalf("exit %d, want 130\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "interrupted by SIGINT") || !strings.Contains(stderr, " left") {
		t.Errorf("stderr does not say it was interrupted and how many cases were left:\n%s", stderr)
	}
	if got := dirNames(t, out); len(got) != 2 || got[0] != "bench.json" || got[1] != "bench.txt" {
		t.Errorf("output directory holds %v, want bench.json and bench.txt only", got)
	}
	var rows []int
	for _, p := range []string{txt, js} {
		bf, err := results.ReadBench(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if n := len(bf.Rows); n < 1 || n >= total {
			t.Errorf("%s: %d rows, want at least 1 and fewer than %d", p, n, total)
		}
		for _, r := range bf.Rows {
			if r.N != 200 {
				t.Errorf("%s: %s has %d samples, want 200 (a finished case)", p, r.Case, r.N)
			}
		}
		rows = append(rows, len(bf.Rows))
	}
	if rows[0] != rows[1] {
		t.Errorf("text has %d rows, JSON %d", rows[0], rows[1])
	}
}

// TestInterruptCheck: SIGTERM during `check` prints the table of what
// finished, writes -json with those rows and exits 143.
func TestInterruptCheck(t *testing.T) {
	bin := buildCLI(t)
	root, err := filepath.Abs(fixtureRoot)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	js := filepath.Join(out, "check.json")
	code, stdout, stderr := interruptAfterFirstResult(t, bin, out, syscall.SIGTERM,
		"check", "-fixtures", root, "-json", js)
	if code != 143 {
		t.Fatalf("exit %d, want 143\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "interrupted by SIGTERM") {
		t.Errorf("stderr does not say it was interrupted:\n%s", stderr)
	}
	cf, err := results.ReadCheck(js)
	if err != nil {
		t.Fatal(err)
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "*", "*", "case.json"))
	if n := len(cf.Rows); n < 1 || n >= len(dirs) {
		t.Errorf("%d rows, want at least 1 and fewer than %d", n, len(dirs))
	}
	for _, r := range cf.Rows {
		if !strings.Contains(stdout, r.Case) {
			t.Errorf("the table lacks finished case %s:\n%s", r.Case, stdout)
		}
	}
	if got := dirNames(t, out); len(got) != 1 {
		t.Errorf("output directory holds %v, want check.json only", got)
	}
}

// TestInterruptRun: SIGINT during the conformance stage of `run` skips
// timing and PyTorch, writes check.json and the report from it, and exits 130.
func TestInterruptRun(t *testing.T) {
	bin := buildCLI(t)
	root, err := filepath.Abs(fixtureRoot)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	dst := filepath.Join(out, "run")
	code, stdout, stderr := interruptAfterFirstResult(t, bin, out, os.Interrupt,
		"run", "-o", dst, "-fixtures", root, "-torch", "off", "-count", "3", "-min-sample", "1ms")
	if code != 130 {
		t.Fatalf("exit %d, want 130\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "conformance interrupted by SIGINT") {
		t.Errorf("stderr does not say it was interrupted:\n%s", stderr)
	}
	if got := dirNames(t, dst); strings.Join(got, " ") != "check.json peak.json report.md" {
		t.Errorf("run wrote %v, want check.json, peak.json and report.md", got)
	}
	cf, err := results.ReadCheck(filepath.Join(dst, "check.json"))
	if err != nil || len(cf.Rows) < 1 {
		t.Fatalf("check.json: %d rows, %v", len(cf.Rows), err)
	}
	md, err := os.ReadFile(filepath.Join(dst, "report.md"))
	if err != nil || !strings.Contains(string(md), cf.Rows[0].Case) {
		t.Errorf("report.md lacks %s (%v)", cf.Rows[0].Case, err)
	}
}
