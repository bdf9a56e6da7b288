package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"vitbench/bench/cases"
	"vitbench/bench/results"
)

// TestCaseGroupsCoverEveryCaseOnceInOrder: run's interleaving groups match exactly their
// own cases (no prefix matches across groups), in list order, n at a time.
func TestCaseGroupsCoverEveryCaseOnceInOrder(t *testing.T) {
	list := cases.Match(nil)
	groups := caseGroups(list, 12)
	if want := (len(list) + 11) / 12; len(groups) != want {
		t.Fatalf("%d groups for %d cases, want %d", len(groups), len(list), want)
	}
	for i, c := range list {
		for g, re := range groups {
			if got, want := re.MatchString(c.Name), g == i/12; got != want {
				t.Errorf("group %d matches %s: %v, want %v", g, c.Name, got, want)
			}
		}
	}
	if len(caseGroups(nil, 12)) != 0 {
		t.Error("groups for no cases")
	}
}

// TestRunCasesQuickAndFull: run times the quick set by default and every built-in case with
// -full, -run filtering either.
func TestRunCasesQuickAndFull(t *testing.T) {
	quick, full := runCases(nil, false), runCases(nil, true)
	if len(full) != len(cases.All()) {
		t.Errorf("-full selects %d cases, want all %d", len(full), len(cases.All()))
	}
	if len(quick) == 0 || len(quick) >= len(full) {
		t.Errorf("quick set of %d cases out of %d", len(quick), len(full))
	}
	for _, c := range quick {
		if !c.Quick {
			t.Errorf("default selection holds %s, which is not marked quick", c.Name)
		}
	}
	re := regexp.MustCompile(`^layernorm/`)
	if q, f := runCases(re, false), runCases(re, true); len(q) != 1 || len(f) < 2 {
		t.Errorf("-run ^layernorm/: quick %d, full %d cases; want 1 and all of them", len(q), len(f))
	}
}

// loadRow is a timed row with a foreign load.
func loadRow(name, backend string, load float64, contended bool) results.BenchRow {
	r := results.NewBenchRow(name, backend, 1, 2, "float32", 10, 10, 0, 0, []float64{100, 110, 120}, nil)
	r.Load = &results.RowLoad{Foreign: load, Contended: contended}
	return r
}

// TestRetimeDecision: a group any of whose rows (vitbench's or PyTorch's) was contended is
// timed once more, its first attempt dropped; the second attempt's rows are kept, marked
// re-timed with the first attempt's load (PyTorch's through a load line appended to its
// text), whatever their own load; a quiet group, a second contended attempt and a stopped
// run are not re-timed.
func TestRetimeDecision(t *testing.T) {
	torchText := func(rows ...results.BenchRow) []byte {
		var b bytes.Buffer
		if err := results.WriteBenchText(&b, results.BenchFile{Rows: rows}); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	var torch []byte
	var stderr bytes.Buffer
	prog := &progress{w: io.Discard, n: 4, now: time.Now}
	rt := &runRetime{texts: []*[]byte{&torch}, prog: prog, stderr: &stderr}
	bf := results.BenchFile{Rows: []results.BenchRow{loadRow("earlier", "cpu", 0.5, true)}}

	// Group 0: vitbench quiet, PyTorch contended: re-timed.
	rt.begin(&bf, 2)
	bf.Rows = append(bf.Rows, loadRow("a", "cpu", 0.02, false), loadRow("b", "cpu", 0.03, false))
	torch = append(torch, torchText(loadRow("a", "torch", 0.4, true))...)
	if got := rt.next(0, &bf, true); got != 0 {
		t.Fatalf("contended PyTorch row: next = %d, want 0 (re-time)", got)
	}
	if len(bf.Rows) != 1 || len(torch) != 0 || prog.n != 6 {
		t.Fatalf("first attempt not dropped: %d rows, %d bytes of PyTorch text, progress total %d", len(bf.Rows), len(torch), prog.n)
	}
	if !strings.Contains(stderr.String(), "up to 40% of the CPUs") {
		t.Errorf("stderr: %q", stderr.String())
	}
	// Second attempt, itself contended on one row: kept, marked, not timed a third time.
	rt.begin(&bf, 2)
	bf.Rows = append(bf.Rows, loadRow("a", "cpu", 0.01, false), loadRow("b", "cpu", 0.3, true))
	torch = append(torch, torchText(loadRow("a", "torch", 0.05, false))...)
	if got := rt.next(0, &bf, true); got != 1 {
		t.Fatalf("after the re-time: next = %d, want 1", got)
	}
	a, b := bf.Rows[1].Load, bf.Rows[2].Load
	if !a.Retimed || a.Foreign != 0.01 || a.FirstForeign != 0.02 || a.FirstContended || !b.Retimed || !b.Contended || b.FirstForeign != 0.03 {
		t.Errorf("re-timed rows' loads %+v, %+v", *a, *b)
	}
	if bf.Rows[0].Load.Retimed {
		t.Error("a row of an earlier group was marked re-timed")
	}
	tf, err := results.ParseBench(torch, "torch.txt")
	if err != nil {
		t.Fatal(err)
	}
	if l := tf.Rows[0].Load; l == nil || !l.Retimed || l.Foreign != 0.05 || l.FirstForeign != 0.4 || !l.FirstContended {
		t.Errorf("PyTorch row's load after the re-time: %+v", l)
	}
	// Group 1: quiet; group 2: contended but the run was stopped.
	rt.begin(&bf, 1)
	bf.Rows = append(bf.Rows, loadRow("c", "cpu", 0.09, false))
	if got := rt.next(1, &bf, true); got != 2 {
		t.Errorf("quiet group: next = %d, want 2", got)
	}
	rt.begin(&bf, 1)
	bf.Rows = append(bf.Rows, loadRow("d", "cpu", 0.9, true))
	if got := rt.next(2, &bf, false); got != 3 || len(bf.Rows) != 5 {
		t.Errorf("stopped run: next = %d with %d rows, want 3 and the rows kept", got, len(bf.Rows))
	}
}

// TestRunGroupFlag: -group sets how many cases vitbench times before the baseline times
// them: with -group 1 the PyTorch script runs once per case, each call naming its one case;
// by default once for both; -group 0 is a usage error.
func TestRunGroupFlag(t *testing.T) {
	const a, b = "layernorm/vit_b16", "layernorm/odd_b2_d147"
	for _, tc := range []struct {
		group []string
		calls int
	}{{nil, 1}, {[]string{"-group", "1"}, 2}} {
		dir := t.TempDir()
		script, argsLog := fakeTorchScript(t, dir)
		args := append([]string{"run", "-full", "-o", filepath.Join(dir, "run"), "-fixtures", fixtureRoot,
			"-run", "^(" + regexp.QuoteMeta(a) + "|" + regexp.QuoteMeta(b) + ")$", "-torch", "on", "-python", "/bin/sh",
			"-torch-script", script, "-count", "2", "-min-sample", "0", "-threads", "1"}, tc.group...)
		if code, _, stderr := vitbench(t, args...); code != exitOK {
			t.Fatalf("%v: exit %d\n%s", tc.group, code, stderr)
		}
		raw, err := os.ReadFile(argsLog)
		if err != nil {
			t.Fatal(err)
		}
		calls := strings.Split(strings.TrimSpace(string(raw)), "\n")
		if len(calls) != tc.calls {
			t.Fatalf("%v: %d PyTorch calls, want %d:\n%s", tc.group, len(calls), tc.calls, raw)
		}
		if tc.calls == 2 {
			for i, name := range []string{a, b} {
				if !strings.Contains(calls[i], regexp.QuoteMeta(name)) || strings.Contains(calls[i], regexp.QuoteMeta([]string{b, a}[i])) {
					t.Errorf("call %d names the wrong cases: %s", i, calls[i])
				}
			}
		}
	}
	if code, _, _ := vitbench(t, "run", "-o", filepath.Join(t.TempDir(), "bad"), "-group", "0", "-torch", "off"); code != exitUsage {
		t.Errorf("-group 0 exits %d, want %d", code, exitUsage)
	}
}
