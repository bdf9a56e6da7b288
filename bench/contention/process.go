package contention

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ProcessCPU returns the CPU time the live threads of process pid have run so far, in
// nanoseconds, summed from /proc/PID/task/*/schedstat (their first field). A thread that
// exits takes its time out of the sum, so the sum can fall: it tells whether the process
// ran between two reads (Quiet), not how long over a span with threads coming and going.
// It is an error where that is not available (not Linux, a kernel without schedstat, the
// process gone).
func ProcessCPU(pid int) (time.Duration, error) {
	files, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(files) == 0 {
		return 0, fmt.Errorf("process %d: no /proc/%d/task/*/schedstat", pid, pid)
	}
	var total time.Duration
	read := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue // a thread that exited meanwhile
		}
		fields := strings.Fields(string(raw))
		if len(fields) == 0 {
			return 0, fmt.Errorf("%s: empty", f)
		}
		ns, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q is not a time in ns", f, fields[0])
		}
		total += time.Duration(ns)
		read++
	}
	if read == 0 {
		return 0, fmt.Errorf("process %d: no thread's schedstat could be read", pid)
	}
	return total, nil
}

// Quiet reports, call after call, whether a process has stayed off the CPUs for at least
// a given time: each call reads its CPU time (ProcessCPU) and answers whether that has not
// changed, either way, for quiet. Where the CPU time cannot be read it always answers true.
type Quiet struct {
	pid     int
	quiet   time.Duration
	last    time.Duration
	changed time.Time
	started bool
}

// NewQuiet watches process pid for spells of quiet.
func NewQuiet(pid int, quiet time.Duration) *Quiet { return &Quiet{pid: pid, quiet: quiet} }

// Now reads the process's CPU time and reports whether it has been unchanged for the quiet
// time (the first call only starts the clock, unless the time cannot be read).
func (q *Quiet) Now() bool {
	cpu, err := ProcessCPU(q.pid)
	if err != nil {
		return true
	}
	now := time.Now()
	if !q.started || cpu != q.last {
		q.started, q.last, q.changed = true, cpu, now
		return false
	}
	return now.Sub(q.changed) >= q.quiet
}
