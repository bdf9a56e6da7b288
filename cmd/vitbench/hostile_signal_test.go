package main

import (
	"bufio"
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

	"vitbench/bench/cases"
	"vitbench/bench/fixture"
	"vitbench/bench/results"
	"vitbench/bench/synth"
)

// signalAfterFirstResult runs vitbench args under the suite's limits, sends sig delay
// after the first finished case is reported on stderr (a long case is then in progress:
// preparing its data at once, running its graph a second later), and returns the run and
// how long the process took from the signal to its exit.
func signalAfterFirstResult(t *testing.T, dir string, sig syscall.Signal, delay time.Duration, args ...string) (hostileRun, time.Duration) {
	t.Helper()
	bin := hostileBinary(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), launchBinEnv+"="+bin, launchASEnv+"="+strconv.Itoa(hostileAS))
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
	first, scanned := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		var once sync.Once
		for sc.Scan() {
			mu.Lock()
			stderr.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if resultLine.MatchString(sc.Text()) {
				once.Do(func() { close(first) })
			}
		}
	}()
	var sent time.Time
	select {
	case <-first:
		time.Sleep(delay)
		sent = time.Now()
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatalf("signal: %v", err)
		}
	case <-scanned:
		cmd.Wait()
		t.Fatalf("%v exited before reporting a case:\n%s", args, stderr.String())
	}
	<-scanned
	err = cmd.Wait()
	after := time.Since(sent)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%v did not stop after %v within a minute", args, sig)
	}
	mu.Lock()
	defer mu.Unlock()
	r := hostileRun{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
	assertNoCrash(t, args, r)
	return r, after
}

// maxStop is how long a signalled command may take to write what finished and exit:
// "within a second", with room for a shared CI machine.
const maxStop = 2 * time.Second

// writeLongFixture writes a fixture of ViT-B/16 at batch 8 with every input and weight
// synthesized and no stored output: seconds of work in ~150 nodes (it then fails, having
// no reference, if nothing stops it).
func writeLongFixture(t *testing.T, dir string) {
	t.Helper()
	c, ok := cases.Lookup("vit_b16")
	if !ok {
		t.Fatal("no case vit_b16")
	}
	spec, err := c.Spec(8)
	if err != nil {
		t.Fatal(err)
	}
	d := fixture.Desc{FormatVersion: 1, Name: "vit_b16/long", Kind: c.Kind, Op: c.Op, Params: c.Params, Batch: 8, DType: "float32",
		Tolerance: c.Tolerance, Inputs: map[string][]int{}, Weights: map[string][]int{}, Outputs: map[string][]int{},
		Synth: &fixture.SynthDesc{Seed: 1, Arrays: map[string]synth.Params{}}}
	for _, a := range spec.Inputs() {
		d.Inputs[a.Name] = a.Shape
		d.Synth.Arrays[a.Name] = synth.DefaultParams(a.Name, a.Shape, true)
	}
	for _, a := range spec.Weights() {
		d.Weights[a.Name] = a.Shape
		d.Synth.Arrays[a.Name] = synth.DefaultParams(a.Name, a.Shape, false)
	}
	for _, a := range spec.Outputs() {
		d.Outputs[a.Name] = a.Shape
	}
	if err := fixture.Write(dir, d, nil); err != nil {
		t.Fatal(err)
	}
}

// TestHostileSignalLongCase: in check and bench the first SIGTERM used to stop only
// "between cases", so a long case ignored timeout's SIGTERM. The case in progress is now
// interrupted (between arrays while its data is prepared, between nodes and timing runs
// while it runs): the command exits 143 (130 for SIGINT) within maxStop of the signal,
// with the finished rows written and marked partial.
func TestHostileSignalLongCase(t *testing.T) {
	root := hostileTree(t)
	writeLongFixture(t, filepath.Join(root, "b_long"))
	js := filepath.Join(t.TempDir(), "check.json")
	r, after := signalAfterFirstResult(t, root, syscall.SIGTERM, 0, "check", "-fixtures", root, "-json", js, "-max-bytes", "3G")
	wantExit(t, r, 143, "check, SIGTERM")
	if after > maxStop {
		t.Errorf("check took %v after SIGTERM to exit, want at most %v", after, maxStop)
	}
	cf, err := results.ReadCheck(js)
	if err != nil || len(cf.Rows) != 1 || cf.Rows[0].Case != goodFixture {
		t.Fatalf("check.json: %+v (%v), want the finished case's row only", cf.Rows, err)
	}
	wantIn(t, "check.json's partial line", cf.Meta.Extra[results.PartialKey], "interrupted by SIGTERM", "1 of 2 cases finished")
	wantIn(t, "check's table", r.stdout, goodFixture)

	dir := t.TempDir()
	txt, bjs := filepath.Join(dir, "bench.txt"), filepath.Join(dir, "bench.json")
	// A second and a half later, vit_b16's data is prepared and its graph is running.
	r, after = signalAfterFirstResult(t, dir, syscall.SIGINT, 1500*time.Millisecond, "bench", "-run", "^(layernorm/odd_b2_d147|vit_b16)$",
		"-count", "20", "-warmup", "0", "-min-sample", "0", "-o", txt, "-json", bjs, "-max-bytes", "3G")
	wantExit(t, r, 130, "bench, SIGINT")
	if after > maxStop {
		t.Errorf("bench took %v after SIGINT to exit, want at most %v", after, maxStop)
	}
	for _, p := range []string{txt, bjs} {
		bf, err := results.ReadBench(p)
		if err != nil || len(bf.Rows) != 1 || bf.Rows[0].Case != "layernorm/odd_b2_d147" || bf.Rows[0].N != 20 {
			t.Fatalf("%s: %+v (%v), want the finished case's row of 20 samples only", p, bf.Rows, err)
		}
		wantIn(t, p+"'s partial line", bf.Meta.Extra[results.PartialKey], "interrupted by SIGINT", "1 of 2 cases finished")
	}
}

// TestHostilePartialReport: the report of an interrupted run did not say it was partial.
// It now says so at the top, and so does `report` from the files such a run left.
func TestHostilePartialReport(t *testing.T) {
	root := hostileTree(t)
	writeLongFixture(t, filepath.Join(root, "b_long"))
	dir := t.TempDir()
	out := filepath.Join(dir, "run")
	r, after := signalAfterFirstResult(t, dir, syscall.SIGTERM, 0, "run", "-full", "-o", out, "-fixtures", root, "-torch", "off", "-count", "3", "-max-bytes", "3G", "-run", "^(soft_split/odd_c5_k3_s2_p1|vit_b16/long)$")
	wantExit(t, r, 143, "run, SIGTERM")
	if after > maxStop {
		t.Errorf("run took %v after SIGTERM to exit, want at most %v", after, maxStop)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(string(md), "\n## ")
	wantIn(t, "report.md's top", head, "Partial results", "interrupted by SIGTERM")
	wantIn(t, "report.md", string(md), goodFixture)

	r = runHostile(t, runOpts{dir: dir}, "report", filepath.Join(out, "check.json"))
	wantExit(t, r, 0, "report check.json")
	head, _, _ = strings.Cut(r.stdout, "\n## ")
	wantIn(t, "report from the partial check.json", head, "Partial results", "interrupted by SIGTERM")
}

// TestHostileMarkdownInjection: a case name with '|' or a line break used to inject rows
// into the Markdown tables. Names, reasons and meta values are escaped: every table keeps
// its rows, and no line of the output starts a row, heading or list item of its own.
func TestHostileMarkdownInjection(t *testing.T) {
	root := hostileTree(t, "b_evil")
	const evil = "evil|name\n| injected | row |\r\n# Heading\u2028- item <script>"
	editJSON(t, filepath.Join(root, "b_evil"), func(m map[string]any) {
		m["name"] = evil
		m["provenance"] = map[string]string{"note": "x"}
	})
	r, rows := checkRows(t, root)
	wantExit(t, r, 0, "check")
	if _, ok := rows[evil]; !ok {
		t.Fatalf("no row for the evil name; rows %v", rowNames(rows))
	}
	assertNoInjection(t, "check's table", r.stdout, false)
	js := filepath.Join(t.TempDir(), "check.json")
	cf := results.CheckFile{Meta: results.Meta{Tool: "vitbench", CPU: "cpu\n# injected heading", Machine: "m|x"}}
	for _, row := range rows {
		cf.Rows = append(cf.Rows, row)
	}
	cf.Rows = append(cf.Rows, results.CheckRow{Case: "bad/reason", Backend: "cpu", DType: "float32", Status: "FAIL",
		Reason: "line one\n| forged | FAIL |\n## Forged section"})
	raw, _ := json.Marshal(struct {
		Meta results.Meta       `json:"meta"`
		Rows []results.CheckRow `json:"rows"`
	}{cf.Meta, cf.Rows})
	os.WriteFile(js, raw, 0o644)
	r = runHostile(t, runOpts{dir: root}, "report", js)
	wantExit(t, r, 0, "report")
	assertNoInjection(t, "the report", r.stdout, true)
	if n := strings.Count(r.stdout, "\n| "); n != 1+len(cf.Rows) { // the header row and one row per result
		t.Errorf("the conformance table has %d rows, want %d:\n%s", n, 1+len(cf.Rows), r.stdout)
	}
}

// assertNoInjection fails the test when a line of out was made by the hostile text (and,
// for Markdown meant to be rendered, html, when an HTML tag survives).
func assertNoInjection(t *testing.T, what, out string, html bool) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		for _, bad := range []string{"| injected", "| forged", "# Heading", "# injected", "## Forged", "- item"} {
			if strings.HasPrefix(strings.TrimSpace(line), bad) {
				t.Errorf("%s: a line made by the input text: %q\n%s", what, line, out)
			}
		}
		if html && strings.Contains(line, "<script>") {
			t.Errorf("%s: an HTML tag from the input survives in %q", what, line)
		}
		if strings.ContainsAny(line, "\r\u2028") {
			t.Errorf("%s: a line break from the input survives in %q", what, line)
		}
	}
}

// TestHostileUnreadableSubdir: one unreadable subdirectory used to abort check with no
// rows. It is now one FAIL row naming the directory (exit 2) and every other case runs.
// As root (who reads everything) the check runs as nobody.
func TestHostileUnreadableSubdir(t *testing.T) {
	base, err := os.MkdirTemp("", "vitbench-unreadable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(base, "tree", "b_locked"), 0o755); os.RemoveAll(base) })
	os.Chmod(base, 0o777)
	root := filepath.Join(base, "tree")
	copyDir(t, filepath.Join(fixtureRoot, goodFixture), filepath.Join(root, "a_good"))
	locked := filepath.Join(root, "b_locked")
	copyDir(t, filepath.Join(fixtureRoot, goodFixture), filepath.Join(locked, "inner"))
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.IsDir() {
			os.Chmod(p, 0o755)
		} else if err == nil {
			os.Chmod(p, 0o644)
		}
		return nil
	})
	os.Chmod(locked, 0)
	opts := runOpts{dir: base}
	if os.Geteuid() == 0 {
		opts.asUser = "65534:65534"
	}
	js := filepath.Join(base, "check.json")
	r := runHostile(t, opts, "check", "-fixtures", root, "-json", js)
	wantExit(t, r, 2, "check")
	cf, err := results.ReadCheck(js)
	if err != nil {
		t.Fatalf("no -json: %v\n%s", err, r.out())
	}
	rows := map[string]results.CheckRow{}
	for _, row := range cf.Rows {
		rows[row.Case] = row
	}
	if rows[goodFixture].Status != "OK" {
		t.Errorf("the good case: %+v", rows[goodFixture])
	}
	wantFailRow(t, rows, locked, locked+": directory could not be read", "permission denied")
}
