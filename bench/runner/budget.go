package runner

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"vitbench/bench"
)

// BudgetError is the error of a case whose declared memory need exceeds the budget: it
// is refused before anything is allocated, and the other cases still run.
type BudgetError struct {
	Case   string
	Need   bench.Need
	Budget int64
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("case %s needs %s of memory, more than the budget of %s (-max-bytes %d); not run. Need: %s",
		e.Case, bench.FormatBytes(e.Need.Total()), bench.FormatBytes(e.Budget), e.Budget, e.Need.Parts())
}

// CheckBudget returns a *BudgetError when spec, run on workers threads, needs more memory
// than budget bytes (0 or less: DefaultMaxBytes), and nil when it fits. It allocates
// nothing: the need is computed from the declared shapes (bench.SpecNeed).
func CheckBudget(caseName string, spec bench.Spec, workers int, budget int64) error {
	if budget <= 0 {
		budget = DefaultMaxBytes()
	}
	need := bench.SpecNeed(spec, workers)
	if need.Total() > budget {
		return &BudgetError{Case: caseName, Need: need, Budget: budget}
	}
	return nil
}

// workersOf is the thread count of a backend that says how many it runs (the CPU's
// Threads), else GOMAXPROCS.
func workersOf(b bench.Backend) int {
	if t, ok := b.(interface{ Threads() int }); ok && t.Threads() > 0 {
		return t.Threads()
	}
	return runtime.GOMAXPROCS(0)
}

var (
	limitOnce sync.Once
	limit     int64
)

// MemoryLimit is the memory this process can use: the smallest of the machine's physical
// memory (MemTotal in /proc/meminfo), its cgroup's limit (cgroup v2 memory.max, v1
// memory.limit_in_bytes) and the address-space and data-segment limits (RLIMIT_AS,
// RLIMIT_DATA). It is computed once; 0 when none of them can be read.
func MemoryLimit() int64 {
	limitOnce.Do(func() {
		cands := []int64{memTotal(), cgroupLimit()}
		for _, res := range []int{syscall.RLIMIT_AS, syscall.RLIMIT_DATA} {
			var rl syscall.Rlimit
			if syscall.Getrlimit(res, &rl) == nil && rl.Cur != ^uint64(0) && rl.Cur < 1<<62 {
				cands = append(cands, int64(rl.Cur))
			}
		}
		for _, c := range cands {
			if c > 0 && (limit == 0 || c < limit) {
				limit = c
			}
		}
	})
	return limit
}

// fallbackMaxBytes is the budget when MemoryLimit cannot tell: 4 GiB.
const fallbackMaxBytes = 4 << 30

// DefaultMaxBytes is the memory budget a case must fit in when none is given: three
// quarters of MemoryLimit (the rest is for the Go runtime, the garbage collector's slack
// and whatever else runs), or 4 GiB when the limit is unknown.
func DefaultMaxBytes() int64 {
	if l := MemoryLimit(); l > 0 {
		return l / 4 * 3
	}
	return fallbackMaxBytes
}

// memTotal reads MemTotal from /proc/meminfo, in bytes; 0 when unknown.
func memTotal() int64 {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil && kb > 0 && kb < 1<<52 {
					return kb * 1024
				}
			}
		}
	}
	return 0
}

// cgroupLimit reads this process's cgroup memory limit (v2, else v1), in bytes; 0 when
// there is none or it cannot be read.
func cgroupLimit() int64 {
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
		if err == nil && v > 0 && v < 1<<62 {
			return v
		}
	}
	return 0
}
