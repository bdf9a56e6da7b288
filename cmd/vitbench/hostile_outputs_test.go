package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"vitbench/bench/results"
)

// TestHostileSpecialOutputs: the atomic write used to rename its temporary file over
// whatever the target was: run as root, -json /dev/null (or a symlink to /dev/stdout)
// replaced the device node with a regular file. A FIFO, a symlink to a device, a symlink
// to /dev/stdout and (as root, where mknod works) a character device are written in place
// and keep their type; a symlink to a regular file keeps being a symlink. The real /dev
// nodes are never targets here: a regression would only replace files in a temporary
// directory.
func TestHostileSpecialOutputs(t *testing.T) {
	root := hostileTree(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	mkfifo(t, fifo)
	got := make(chan string, 1)
	go func() {
		raw, _ := os.ReadFile(fifo)
		got <- string(raw)
	}()
	r := runHostile(t, runOpts{dir: root}, "check", "-fixtures", root, "-json", fifo)
	wantExit(t, r, 0, "check -json FIFO")
	select {
	case s := <-got:
		if !strings.Contains(s, `"case": "`+goodFixture+`"`) {
			t.Errorf("the FIFO's reader got %q, want the JSON rows", s)
		}
	case <-time.After(10 * time.Second):
		os.WriteFile(fifo, nil, 0)
		t.Errorf("nothing came through the FIFO")
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("-json FIFO: the FIFO became %v (%v)", st.Mode(), err)
	}

	links := map[string]string{"null-link": "/dev/null", "stdout-link": "/dev/stdout"}
	for name, dest := range links {
		p := filepath.Join(dir, name)
		if err := os.Symlink(dest, p); err != nil {
			t.Fatal(err)
		}
		r := runHostile(t, runOpts{dir: root}, "check", "-fixtures", root, "-json", p)
		wantExit(t, r, 0, "check -json", name)
		if st, err := os.Lstat(p); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Errorf("-json %s (-> %s): the symlink became %v (%v)", name, dest, st.Mode(), err)
		}
		if dest == "/dev/stdout" && !strings.Contains(r.stdout, `"rows": [`) {
			t.Errorf("-json -> /dev/stdout: stdout lacks the JSON:\n%s", r.stdout)
		}
	}

	// A character device of our own (the major and minor of /dev/null), where allowed.
	dev := filepath.Join(dir, "null-device")
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
		if f, err := os.OpenFile(dev, os.O_WRONLY, 0); err == nil {
			f.Close()
			r := runHostile(t, runOpts{dir: root}, "check", "-fixtures", root, "-json", dev)
			wantExit(t, r, 0, "check -json char device")
			if st, err := os.Lstat(dev); err != nil || st.Mode()&os.ModeCharDevice == 0 {
				t.Errorf("-json char device: the device became %v (%v)", st.Mode(), err)
			}
		} else {
			t.Logf("mknod'd device unusable here (%v): that part is skipped", err)
		}
	} else {
		t.Logf("mknod not permitted (%v): that part is skipped", err)
	}

	real := filepath.Join(dir, "real.json")
	os.WriteFile(real, []byte("{}"), 0o644)
	link := filepath.Join(dir, "link.json")
	os.Symlink("real.json", link)
	r = runHostile(t, runOpts{dir: root}, "check", "-fixtures", root, "-json", link)
	wantExit(t, r, 0, "check -json symlink")
	if st, _ := os.Lstat(link); st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("-json symlink to a file: the symlink was replaced")
	}
	if cf, err := results.ReadCheck(real); err != nil || len(cf.Rows) != 1 {
		t.Errorf("-json symlink: its target holds %d rows (%v), want 1", len(cf.Rows), err)
	}
}

// TestHostileUnwritableOutput: output paths used to be checked only after the whole run,
// so an unwritable -o threw every timing away. A destination that cannot be written (its
// directory missing, under a regular file, or a directory itself) is now bad usage (exit
// 2) before any case runs, naming the flag and the path.
func TestHostileUnwritableOutput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	root := hostileTree(t)
	for _, c := range []struct {
		flag, path, want string
	}{
		{"-o", filepath.Join(dir, "missing", "bench.txt"), "missing"},
		{"-o", filepath.Join(file, "bench.txt"), "not a directory"},
		{"-o", dir, "a directory, not a file"},
		{"-json", dir, "a directory, not a file"},
		{"-cpuprofile", filepath.Join(dir, "missing", "cpu.prof"), "missing"},
	} {
		args := []string{"bench", "-run", "^vit_b16$", "-count", "100", c.flag, c.path}
		r := runHostile(t, runOpts{dir: dir, timeout: 10 * time.Second}, args...)
		wantExit(t, r, 2, args...)
		wantIn(t, strings.Join(args, " "), r.stderr, c.flag+": "+c.path, c.want, "checked before running")
		if strings.Contains(r.stderr, "vit_b16  ") || r.elapsed > 5*time.Second {
			t.Errorf("%v: a case ran (%v) before the output was checked:\n%s", args, r.elapsed, r.stderr)
		}
	}
	for _, args := range [][]string{
		{"check", "-fixtures", root, "-json", dir},
		{"agree", "-ref", "cpu", "-backend", "cpu", "-run", "^vit_b16$", "-json", dir},
		{"report", "-o", filepath.Join(file, "report.md"), filepath.Join(dir, "none.json")},
		{"run", "-o", file, "-torch", "off"},
		{"baseline", "-o", dir},
	} {
		r := runHostile(t, runOpts{dir: dir}, args...)
		wantExit(t, r, 2, args...)
		if strings.Contains(r.stdout, "OK") {
			t.Errorf("%v ran before failing on its output:\n%s", args, r.out())
		}
	}
}

// TestHostileFailedWrite: a result file whose write fails (here: a symlink to /dev/full,
// which takes no byte) used to exit 1, the code of a failing case, with the results lost.
// Now the results are kept in a fallback file named on stderr and the exit status is 3;
// the other output (-json beside a failing -o) is written as usual.
func TestHostileFailedWrite(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	root := hostileTree(t)
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	os.Symlink("/dev/full", full)
	tmp := t.TempDir()
	r := runHostile(t, runOpts{dir: root, env: []string{"TMPDIR=" + tmp}}, "check", "-fixtures", root, "-json", full)
	wantExit(t, r, 3, "check -json /dev/full")
	wantIn(t, "stderr", r.stderr, "writing "+full, "no space left on device", "the results are kept in "+tmp)
	fallbacks, _ := filepath.Glob(filepath.Join(tmp, "vitbench-full-*"))
	if len(fallbacks) != 1 {
		t.Fatalf("fallback files %v, want one", fallbacks)
	}
	if cf, err := results.ReadCheck(fallbacks[0]); err != nil || len(cf.Rows) != 1 || cf.Rows[0].Status != "OK" {
		t.Errorf("the fallback holds %+v (%v), want the one OK row", cf.Rows, err)
	}
	if !strings.Contains(r.stdout, goodFixture) {
		t.Errorf("the table is not on stdout:\n%s", r.stdout)
	}

	js := filepath.Join(dir, "bench.json")
	r = runHostile(t, runOpts{dir: dir, env: []string{"TMPDIR=" + tmp}}, "bench", "-run", "^layernorm/odd_b2_d147$", "-count", "2",
		"-warmup", "0", "-min-sample", "0", "-o", full, "-json", js)
	wantExit(t, r, 3, "bench -o /dev/full")
	if bf, err := results.ReadBench(js); err != nil || len(bf.Rows) != 1 {
		t.Errorf("-json beside the failing -o: %d rows (%v), want 1", len(bf.Rows), err)
	}
	texts, _ := filepath.Glob(filepath.Join(tmp, "vitbench-full-*"))
	if len(texts) != 2 {
		t.Errorf("fallback files %v, want the check's and the bench text's", texts)
	}
}
