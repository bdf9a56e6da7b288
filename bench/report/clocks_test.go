package report

import (
	"bytes"
	"strings"
	"testing"

	"vitbench/bench/results"
)

// TestClockLineUnderTables checks that the components and networks tables say, under the
// table, which clock each column used: CUDA events after an L2 flush for vitbench's CUDA
// backends, wall clock for the others, and for PyTorch what its file's clock line says.
func TestClockLineUnderTables(t *testing.T) {
	render := func(in Input) string {
		t.Helper()
		var buf bytes.Buffer
		if err := Markdown(&buf, in); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	// clockOf returns the "Clocks:" line of a section, checking it follows the table.
	clockOf := func(md, title string) string {
		t.Helper()
		sec := sectionOf(t, md, title)
		i := strings.Index(sec, "\nClocks: ")
		if i < 0 {
			t.Fatalf("%s: no clock line:\n%s", title, sec)
		}
		if last := strings.LastIndex(sec, "\n|"); last > i {
			t.Errorf("%s: the clock line is not under the table:\n%s", title, sec)
		}
		line, _, _ := strings.Cut(sec[i+1:], "\n")
		return line
	}

	// The sample: vitbench cpu and cuda, PyTorch on the CPU only (no clock line: wall clock).
	in := sampleInput()
	md := render(in)
	if got, want := clockOf(md, "Components"), "Clocks: vitbench cuda: CUDA events after an L2 flush; vitbench cpu: wall clock; PyTorch on the CPU: wall clock."; got != want {
		t.Errorf("components:\n got %q\nwant %q", got, want)
	}
	if got, want := clockOf(md, "Networks"), "Clocks: vitbench cpu: wall clock; PyTorch on the CPU: wall clock."; got != want {
		t.Errorf("networks:\n got %q\nwant %q", got, want)
	}

	// PyTorch on the GPU beside the cuda row, as bench_torch.py --device cuda writes it.
	gpuTorch := results.BenchFile{
		Meta: results.Meta{Tool: "bench_torch.py", Machine: "h200", CPU: "EPYC",
			Extra: map[string]string{"cuda": "12.4 on NVIDIA H200", "clock": "cuda-events", "l2-flush-mib": "100"}},
		Rows: []results.BenchRow{row("patch_embed/vit_b16", "torch", 1, 1, 0.08e6, 115605504)},
	}
	in.Bench = append(in.Bench, gpuTorch)
	in.BenchPaths = append(in.BenchPaths, "out/torch-gpu.txt")
	want := "Clocks: vitbench cuda: CUDA events after an L2 flush; vitbench cpu: wall clock; " +
		"PyTorch on the GPU: CUDA events after the same L2 flush; PyTorch on the CPU: wall clock."
	if got := clockOf(render(in), "Components"); got != want {
		t.Errorf("components with PyTorch on the GPU:\n got %q\nwant %q", got, want)
	}

	// A GPU file of an older bench_torch.py (no clock line) is not claimed to use events.
	delete(gpuTorch.Meta.Extra, "clock")
	delete(gpuTorch.Meta.Extra, "l2-flush-mib")
	if got := clockOf(render(in), "Components"); !strings.Contains(got, "PyTorch on the GPU: wall clock around torch.cuda.synchronize, no L2 flush;") {
		t.Errorf("components with an old PyTorch GPU file: %q", got)
	}

	// The CUDA emulator's rows are not GPU clocks.
	in.Bench[2].Rows = append(in.Bench[2].Rows, row("patch_embed/vit_b16", "cuda-emu", 1, 1, 9e6, 115605504))
	if got := clockOf(render(in), "Components"); !strings.HasPrefix(got, "Clocks: vitbench cuda: CUDA events after an L2 flush; "+
		"vitbench cuda-emu: the CUDA emulator's events (host wall clock); vitbench cpu: wall clock;") {
		t.Errorf("components with cuda-emu rows: %q", got)
	}

	// An explicit "clock: wall" on the CPU reads the same as none.
	in.Bench[1].Meta.Extra = map[string]string{"torch-version": "2.5.1", "clock": "wall"}
	if got := clockOf(render(in), "Networks"); got != "Clocks: vitbench cpu: wall clock; PyTorch on the CPU: wall clock." {
		t.Errorf("networks with clock: wall: %q", got)
	}
}
