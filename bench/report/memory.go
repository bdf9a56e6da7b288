package report

import (
	"fmt"
	"io"
)

// writeMemory writes the network memory table: for each network row of a vitbench backend
// with a process peak RSS, the backend allocator's peak, the process's peak resident set over
// the case (B/rss), PyTorch's over the same case, batch and threads on the same machine, and
// their ratio. Both processes measure VmHWM the same way (freed memory returned to the system,
// then VmHWM restarted before the case), each including its own runtime.
func writeMemory(w io.Writer, in Input, es []entry) error {
	var cells [][]string
	multi := machineCount(es) > 1
	for _, e := range es {
		if isReference(e.Backend) || in.kind(e.Case) != KindNetwork || e.RSSBytes <= 0 {
			continue
		}
		torchRSS, ratio := dash, dash
		if t, ok := torchFor(es, e); ok && t.RSSBytes > 0 {
			torchRSS = fmtMiB(t.RSSBytes)
			ratio = fmt.Sprintf("%.2f", float64(e.RSSBytes)/float64(t.RSSBytes))
		}
		row := []string{e.Case, e.Backend, e.DType, fmt.Sprint(e.Batch), fmt.Sprint(e.Threads),
			fmtMiB(e.PeakBytes), fmtMiB(e.RSSBytes), torchRSS, ratio}
		if multi {
			row = append([]string{e.machine}, row...)
		}
		cells = append(cells, row)
	}
	if len(cells) == 0 {
		return nil
	}
	header := []string{"model", "backend", "dtype", "batch", "threads", "allocator peak MiB", "process peak RSS MiB",
		"PyTorch process peak RSS MiB", "RSS ratio (vitbench / PyTorch)"}
	align := "lllrrrrrr"
	if multi {
		header = append([]string{"machine"}, header...)
		align = "l" + align
	}
	section(w, "Network memory",
		"Peak resident set (VmHWM) of each process over one case: each process first returns the memory earlier cases freed "+
			"(Go's FreeOSMemory; gc and glibc's malloc_trim in Python), then restarts VmHWM, just before the case's weights and inputs are built. "+
			"Each figure includes its own runtime (Go; Python with torch's libraries). A ratio below 1 means vitbench held less memory.")
	return writeTable(w, align, header, cells)
}
