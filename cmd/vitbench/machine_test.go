package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"vitbench/bench/report"
	"vitbench/bench/results"
	vcpu "vitbench/impl/cpu"
)

// TestFillMachines: -machine names every file that names none; without it a file takes the
// name of a file with the same CPU, else this machine's when the CPU is this one's, and a
// file from another CPU is left as it is.
func TestFillMachines(t *testing.T) {
	local := vcpu.CPUModel()
	mk := func() report.Input {
		return report.Input{
			Bench: []results.BenchFile{
				{Meta: results.Meta{CPU: "Other CPU", Machine: "box-a"}},
				{Meta: results.Meta{CPU: "Other CPU"}},   // torch.txt beside box-a's bench.txt
				{Meta: results.Meta{CPU: "Foreign CPU"}}, // from elsewhere, unnamed
				{Meta: results.Meta{CPU: local}},
			},
			Check: []results.CheckFile{{Meta: results.Meta{}}},
		}
	}
	in := mk()
	fillMachines(&in, "")
	got := []string{in.Bench[0].Meta.Machine, in.Bench[1].Meta.Machine, in.Bench[2].Meta.Machine, in.Bench[3].Meta.Machine, in.Check[0].Meta.Machine}
	want := []string{"box-a", "box-a", "", localMachine(), localMachine()}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("default: machines %q, want %q", got, want)
	}
	in = mk()
	fillMachines(&in, "named")
	got = []string{in.Bench[0].Meta.Machine, in.Bench[1].Meta.Machine, in.Bench[2].Meta.Machine, in.Check[0].Meta.Machine}
	if strings.Join(got, "|") != "box-a|named|named|named" {
		t.Errorf("-machine named: machines %q", got)
	}
	if host, _ := os.Hostname(); host != "" && !strings.HasPrefix(localMachine(), host) {
		t.Errorf("localMachine() = %q, want it to start with the host name %q", localMachine(), host)
	}
}

// TestReportMachineFlag: the report's header names the machine: -machine NAME, else this
// host and CPU for a file measured here that names none.
func TestReportMachineFlag(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "bench.json")
	bf := results.BenchFile{Meta: results.Meta{Tool: "vitbench", CPU: vcpu.CPUModel()}, Rows: []results.BenchRow{
		results.NewBenchRow("gemm/x", "cpu", 1, 1, "float32", 1000, 100, 0, 0, []float64{1e3, 1.1e3, 1.2e3}, nil)}}
	if err := results.WriteFileAtomic(p, func(w io.Writer) error { return results.WriteBenchJSON(w, bf) }); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "-machine", "lab-box 7", p}, "- Machine: lab-box 7\n"},
		{[]string{"report", p}, "- Machine: " + report.Inline(localMachine()) + "\n"},
	} {
		code, out, stderr := vitbench(t, tt.args...)
		if code != exitOK || !strings.Contains(out, tt.want) {
			t.Errorf("%v: exit %d, output lacks %q\n%s\n%s", tt.args, code, tt.want, out, stderr)
		}
	}
}
