package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// writeClocks writes, under a components or networks table, which clock each of its time
// columns was taken with (clockLine); nothing when shown is empty.
func writeClocks(w io.Writer, in Input, es, shown []entry) {
	if l := clockLine(in, es, shown); l != "" {
		fmt.Fprintf(w, "\n%s\n", Inline(l))
	}
	writeContentionNote(w, es, shown)
	writeArrangementNote(w, es, shown)
}

// clockLine says which clock the times of shown (the vitbench rows of a table) and of the
// PyTorch rows paired with them (torchFor) were taken with: vitbench's CUDA backends use CUDA
// events after an L2 flush (impl/cuda/timing.go), which on the CUDA emulator (cuda-emu*) are
// host clock readings (impl/cuda/emu/driver.cc); its other backends use the host's wall clock;
// a PyTorch file says its clock in its "clock" config line (reference/bench_torch.py:
// "cuda-events" after the same flush, with "l2-flush-mib", or "wall"). A PyTorch file
// without that line is a GPU file of an older bench_torch.py (wall clock around
// torch.cuda.synchronize, no flush) when it has a "cuda" line, else wall clock.
func clockLine(in Input, es, shown []entry) string {
	var cuda, emu, host []string
	torchClocks := map[string][]string{} // "PyTorch on the GPU" -> clocks
	for _, e := range shown {
		switch {
		case strings.HasPrefix(e.Backend, "cuda-emu"):
			emu = appendNew(emu, e.Backend)
		case strings.HasPrefix(e.Backend, "cuda"):
			cuda = appendNew(cuda, e.Backend)
		default:
			host = appendNew(host, e.Backend)
		}
		if t, ok := torchFor(es, e); ok && t.file < len(in.Bench) {
			where, clock := torchClock(in.Bench[t.file].Meta.Extra)
			torchClocks[where] = appendNew(torchClocks[where], clock)
		}
	}
	var parts []string
	if len(cuda) > 0 {
		slices.Sort(cuda)
		parts = append(parts, "vitbench "+strings.Join(cuda, ", ")+": CUDA events after an L2 flush")
	}
	if len(emu) > 0 {
		slices.Sort(emu)
		parts = append(parts, "vitbench "+strings.Join(emu, ", ")+": the CUDA emulator's events (host wall clock)")
	}
	if len(host) > 0 {
		slices.Sort(host)
		parts = append(parts, "vitbench "+strings.Join(host, ", ")+": wall clock")
	}
	for _, where := range []string{"PyTorch on the GPU", "PyTorch on the CPU"} {
		if cs := torchClocks[where]; len(cs) > 0 {
			parts = append(parts, where+": "+strings.Join(cs, " or "))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "Clocks: " + strings.Join(parts, "; ") + "."
}

// torchClock names where a PyTorch file ran and its clock, from its config lines.
func torchClock(extra map[string]string) (where, clock string) {
	gpu := extra["cuda"] != ""
	switch c := extra["clock"]; {
	case c == "cuda-events" && extra["l2-flush-mib"] != "":
		return "PyTorch on the GPU", "CUDA events after the same L2 flush"
	case c == "cuda-events":
		return "PyTorch on the GPU", "CUDA events"
	case c == "" && gpu:
		return "PyTorch on the GPU", "wall clock around torch.cuda.synchronize, no L2 flush"
	case c == "" || c == "wall":
		if gpu {
			return "PyTorch on the GPU", "wall clock"
		}
		return "PyTorch on the CPU", "wall clock"
	default:
		if gpu {
			return "PyTorch on the GPU", c
		}
		return "PyTorch on the CPU", c
	}
}
