package main

// The hostile-input suite: every class of input the reliability issues found vitbench
// crashing, hanging, blowing up memory or destroying a file on, each run as a user (or an
// attacker) would run it: the real binary in a subprocess, under a 4 GiB address-space
// limit and a timeout. Each test asserts no panic and no Go fatal error, the documented
// exit code, a message naming the file and the problem, and every other case's row. The
// launcher is this test binary itself (TestMain): it applies the limits, then execs the
// vitbench binary, so that no outside tool is needed.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"vitbench/bench/contention"
	"vitbench/bench/results"
)

// Environment of the launcher mode of this test binary.
const (
	launchBinEnv = "VITBENCH_TEST_LAUNCH_BIN"   // the binary to exec under the limits
	launchUIDEnv = "VITBENCH_TEST_LAUNCH_AS"    // uid:gid to drop to first (root only)
	hostileAS    = 4 << 30                      // RLIMIT_AS of every hostile run
	launchASEnv  = "VITBENCH_TEST_LAUNCH_BYTES" // the address-space limit, bytes
)

// TestMain runs the tests, or, when started as a launcher by runHostile, limits its own
// address space (RLIMIT_AS, inherited across exec), drops to another user if asked, and
// execs the vitbench binary with the remaining arguments.
func TestMain(m *testing.M) {
	if bin := os.Getenv(launchBinEnv); bin != "" {
		os.Exit(launch(bin))
	}
	// No cross-CPU probes: a host moving the vCPUs between dies would make `run` re-time a
	// group, and the tests that count baseline calls or rows would see it twice. The
	// probe and the re-time decision have tests of their own (bench/contention,
	// TestRetimeWhenCoresMoved).
	os.Setenv(contention.ProbeEnv, "off")
	code := m.Run()
	if hostileDir != "" {
		os.RemoveAll(hostileDir)
	}
	os.Exit(code)
}

// launch is the launcher: limits, credentials, exec. It returns only on failure.
func launch(bin string) int {
	limit, _ := strconv.ParseUint(os.Getenv(launchASEnv), 10, 64)
	if limit > 0 {
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
			os.Stderr.WriteString("launcher: setrlimit: " + err.Error() + "\n")
			return 125
		}
	}
	if as := os.Getenv(launchUIDEnv); as != "" {
		u, g, _ := strings.Cut(as, ":")
		uid, _ := strconv.Atoi(u)
		gid, _ := strconv.Atoi(g)
		if err := syscall.Setgroups(nil); err != nil {
			os.Stderr.WriteString("launcher: setgroups: " + err.Error() + "\n")
			return 125
		}
		if err := syscall.Setgid(gid); err != nil {
			os.Stderr.WriteString("launcher: setgid: " + err.Error() + "\n")
			return 125
		}
		if err := syscall.Setuid(uid); err != nil {
			os.Stderr.WriteString("launcher: setuid: " + err.Error() + "\n")
			return 125
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VITBENCH_TEST_LAUNCH") {
			env = append(env, kv)
		}
	}
	args := append([]string{bin}, os.Args[1:]...)
	err := syscall.Exec(bin, args, env)
	os.Stderr.WriteString("launcher: exec " + bin + ": " + err.Error() + "\n")
	return 125
}

var (
	hostileOnce sync.Once
	hostileDir  string // holds the binary; removed by TestMain
	hostileBin  string
	hostileErr  error
)

// hostileBinary builds the vitbench binary once for the whole suite, in a directory
// anyone may read (the unreadable-directory test runs it as another user).
func hostileBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	hostileOnce.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			hostileErr = err
			return
		}
		if hostileDir, err = os.MkdirTemp("", "vitbench-hostile-bin-"); err != nil {
			hostileErr = err
			return
		}
		os.Chmod(hostileDir, 0o755)
		hostileBin = filepath.Join(hostileDir, "vitbench")
		if out, err := exec.Command(goTool, "build", "-o", hostileBin, "vitbench/cmd/vitbench").CombinedOutput(); err != nil {
			hostileErr = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if hostileErr != nil {
		t.Fatal(hostileErr)
	}
	return hostileBin
}

// hostileRun is how one hostile command ran.
type hostileRun struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
}

// out is stdout and stderr together, for messages.
func (r hostileRun) out() string { return r.stdout + r.stderr }

// runOpts are the optional settings of runHostile.
type runOpts struct {
	dir     string        // working directory ("" = a fresh temporary one)
	timeout time.Duration // 0 = 20 s
	env     []string      // added to the environment
	asUser  string        // "uid:gid" to run as (root only)
	stdin   string
}

// runHostile runs vitbench args under the suite's memory limit and a timeout, and fails
// the test when it crashed: a timeout, a panic, a Go fatal error (out of memory), an
// internal error or a stack trace.
func runHostile(t *testing.T, o runOpts, args ...string) hostileRun {
	t.Helper()
	bin := hostileBinary(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if o.timeout == 0 {
		o.timeout = 20 * time.Second
	}
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Dir = o.dir
	cmd.Env = append(append(os.Environ(), launchBinEnv+"="+bin, launchASEnv+"="+strconv.Itoa(hostileAS)), o.env...)
	if o.asUser != "" {
		cmd.Env = append(cmd.Env, launchUIDEnv+"="+o.asUser)
	}
	cmd.Stdin = strings.NewReader(o.stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	r := hostileRun{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("vitbench %v: %v", args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("vitbench %v did not finish within %v (a hang):\n%s", args, o.timeout, r.out())
	}
	if r.code == 125 && strings.Contains(r.stderr, "launcher:") {
		t.Fatalf("launcher failed: %s", r.stderr)
	}
	assertNoCrash(t, args, r)
	return r
}

// assertNoCrash fails the test when the output shows a crash.
func assertNoCrash(t *testing.T, args []string, r hostileRun) {
	t.Helper()
	for _, bad := range []string{"panic:", "fatal error:", "goroutine ", "runtime error", "internal error", "makeslice", "out of memory"} {
		if strings.Contains(r.out(), bad) {
			t.Fatalf("vitbench %v crashed (%q in its output), exit %d:\n%s", args, bad, r.code, r.out())
		}
	}
}

// wantExit fails the test unless r exited with code.
func wantExit(t *testing.T, r hostileRun, code int, args ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("vitbench %v: exit %d, want %d\n%s", args, r.code, code, r.out())
	}
}

// wantIn fails the test unless every s is in text.
func wantIn(t *testing.T, what, text string, s ...string) {
	t.Helper()
	for _, x := range s {
		if !strings.Contains(text, x) {
			t.Errorf("%s lacks %q:\n%s", what, x, text)
		}
	}
}

// goodFixture is the small committed fixture every tree holds beside its hostile cases:
// its row must be OK whatever the others do.
const goodFixture = "soft_split/odd_c5_k3_s2_p1"

// hostileTree returns a new fixture tree holding the good fixture as "a_good", and
// each named case directory as a copy of it renamed to soft_split/<dir>, for the test to
// break.
func hostileTree(t *testing.T, dirs ...string) string {
	t.Helper()
	root := t.TempDir()
	copyDir(t, filepath.Join(fixtureRoot, goodFixture), filepath.Join(root, "a_good"))
	for _, d := range dirs {
		p := filepath.Join(root, d)
		copyDir(t, filepath.Join(fixtureRoot, goodFixture), p)
		editJSON(t, p, func(m map[string]any) { m["name"] = "soft_split/" + d })
	}
	return root
}

// writeCase writes dir/case.json from a JSON literal.
func writeCase(t *testing.T, dir, caseJSON string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "case.json"), []byte(caseJSON), 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkRows runs `check -fixtures root -json FILE extra...` under the limits and returns
// the run and its rows by case name (or directory, for cases whose case.json is unreadable).
func checkRows(t *testing.T, root string, extra ...string) (hostileRun, map[string]results.CheckRow) {
	t.Helper()
	js := filepath.Join(t.TempDir(), "check.json")
	args := append([]string{"check", "-fixtures", root, "-json", js}, extra...)
	r := runHostile(t, runOpts{dir: root}, args...)
	cf, err := results.ReadCheck(js)
	if err != nil {
		t.Fatalf("vitbench %v wrote no readable -json (%v); exit %d:\n%s", args, err, r.code, r.out())
	}
	rows := map[string]results.CheckRow{}
	for _, row := range cf.Rows {
		rows[row.Case] = row
	}
	if ok := rows[goodFixture]; ok.Status != "OK" {
		t.Errorf("the good case beside the hostile ones is %q (%s), want OK; rows %v", ok.Status, ok.Reason, cf.Rows)
	}
	return r, rows
}

// wantFailRow fails the test unless rows holds a FAIL row for name whose reason holds
// every s.
func wantFailRow(t *testing.T, rows map[string]results.CheckRow, name string, s ...string) {
	t.Helper()
	row, ok := rows[name]
	if !ok {
		t.Errorf("no row for %s; rows: %v", name, rowNames(rows))
		return
	}
	if row.Status != "FAIL" {
		t.Errorf("%s: status %s, want FAIL (%s)", name, row.Status, row.Reason)
	}
	wantIn(t, name+"'s reason", row.Reason, s...)
}

func rowNames(rows map[string]results.CheckRow) []string {
	var out []string
	for k := range rows {
		out = append(out, k)
	}
	return out
}

// writeJSONFile writes v as JSON to path.
func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// mkfifo makes a FIFO at path.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatalf("mkfifo %s: %v", path, err)
	}
}
