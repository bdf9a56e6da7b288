package cuda

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"vitbench/bench/cases"
)

// ptxasFunc is one function of ptxas's --verbose report: an entry point
// (a kernel) with its registers and static shared memory, or a device
// function ptxas did not inline, with only its frame and spills.
type ptxasFunc struct {
	name                    string
	entry                   bool
	arch                    string // "sm_80"; entry points only
	registers, smem         int    // per thread; bytes of static shared memory
	used                    bool   // the "Used N registers" line was seen
	stack, spillSt, spillLd int    // bytes of stack frame, spill stores, spill loads
}

var (
	ptxasEntryRE = regexp.MustCompile(`Compiling entry function '([^']+)' for '(sm_\d+)'`)
	ptxasPropsRE = regexp.MustCompile(`Function properties for (\S+)`)
	ptxasFrameRE = regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	ptxasUsedRE  = regexp.MustCompile(`Used (\d+) registers`)
	ptxasSmemRE  = regexp.MustCompile(`(\d+) bytes smem`)
)

// parsePtxasLog reads the functions out of the log of an NVRTC compile
// with --ptxas-options=-v, as NVRTC 11.8 writes it:
//
//	ptxas info    : Compiling entry function 'layernorm_f32' for 'sm_80'
//	ptxas info    : Function properties for layernorm_f32
//	ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//	ptxas info    : Used 30 registers, 256 bytes smem, 392 bytes cmem[0]
//
// A "Function properties" block of another name is a device function that
// was not inlined. Lines out of that order are an error.
func parsePtxasLog(log string) ([]*ptxasFunc, error) {
	var funcs []*ptxasFunc
	var entry, props *ptxasFunc
	for _, line := range strings.Split(log, "\n") {
		if m := ptxasEntryRE.FindStringSubmatch(line); m != nil {
			entry = &ptxasFunc{name: m[1], entry: true, arch: m[2]}
			props = nil
			funcs = append(funcs, entry)
			continue
		}
		if m := ptxasPropsRE.FindStringSubmatch(line); m != nil {
			props = entry
			if entry == nil || entry.name != m[1] {
				props = &ptxasFunc{name: m[1]}
				funcs = append(funcs, props)
			}
			continue
		}
		if m := ptxasFrameRE.FindStringSubmatch(line); m != nil {
			if props == nil {
				return nil, fmt.Errorf("ptxas log: frame line before any function: %q", line)
			}
			props.stack, props.spillSt, props.spillLd = atoi(m[1]), atoi(m[2]), atoi(m[3])
			continue
		}
		if m := ptxasUsedRE.FindStringSubmatch(line); m != nil {
			if entry == nil {
				return nil, fmt.Errorf("ptxas log: register line before any entry function: %q", line)
			}
			entry.registers, entry.used = atoi(m[1]), true
			if s := ptxasSmemRE.FindStringSubmatch(line); s != nil {
				entry.smem = atoi(s[1])
			}
		}
	}
	for _, f := range funcs {
		if f.entry && !f.used {
			return nil, fmt.Errorf("ptxas log: no register count for entry function %s", f.name)
		}
	}
	return funcs, nil
}

func atoi(s string) int {
	v, _ := strconv.Atoi(s)
	return v
}

// smLimits are the per-SM and per-block limits of one architecture
// (CUDA C Programming Guide, compute capabilities table).
type smLimits struct {
	arch            int
	regsPerSM       int // 32-bit registers in one SM's register file
	regsPerThread   int // the most one thread may use
	regUnit         int // registers are given to a warp in units of this many
	smemNoOptIn     int // static + dynamic shared memory a block gets without opt-in
	smemOptIn       int // the most a block may opt in to (cudaFuncAttributeMaxDynamicSharedMemorySize)
	maxThreadsBlock int
}

// resourceArchs are the architectures the resource check compiles for:
// the A100 (sm_80) and H100/H200 (sm_90).
var resourceArchs = []smLimits{
	{arch: 80, regsPerSM: 64 << 10, regsPerThread: 255, regUnit: 256, smemNoOptIn: 48 << 10, smemOptIn: 163 << 10, maxThreadsBlock: 1024},
	{arch: 90, regsPerSM: 64 << 10, regsPerThread: 255, regUnit: 256, smemNoOptIn: 48 << 10, smemOptIn: 227 << 10, maxThreadsBlock: 1024},
}

// blockRegisters returns the registers a block of threads threads, each
// using regs, takes from the register file: per warp, 32·regs rounded up
// to the allocation unit, for every (partly filled) warp.
func blockRegisters(regs, threads int, l smLimits) int {
	warps := (threads + 31) / 32
	perWarp := (regs*32 + l.regUnit - 1) / l.regUnit * l.regUnit
	return warps * perWarp
}

// launchFits says why a launch of block threads with shared bytes of
// dynamic shared memory cannot run kernel f on an SM of l, or "" when it
// can. The backend never opts in to more than 48 KiB (checkLaunchDims
// refuses larger dynamic sizes and no kernel sets
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), so that is the limit.
func launchFits(f *ptxasFunc, threads, shared int, l smLimits) string {
	var why []string
	if f.registers > l.regsPerThread {
		why = append(why, fmt.Sprintf("%d registers a thread, more than %d", f.registers, l.regsPerThread))
	}
	if threads > l.maxThreadsBlock {
		why = append(why, fmt.Sprintf("%d threads, more than %d", threads, l.maxThreadsBlock))
	}
	if r := blockRegisters(f.registers, threads, l); r > l.regsPerSM {
		why = append(why, fmt.Sprintf("%d threads × %d registers take %d registers, more than the SM's %d",
			threads, f.registers, r, l.regsPerSM))
	}
	if s := f.smem + shared; s > l.smemNoOptIn {
		why = append(why, fmt.Sprintf("%d bytes static + %d dynamic shared memory, more than %d without opt-in (%d with)",
			f.smem, shared, l.smemNoOptIn, l.smemOptIn))
	}
	return strings.Join(why, "; ")
}

// builtinLaunches plans every built-in case's graph on a recording backend
// of each math, as TestDryRunEveryBuiltinCase does, and returns the kernel
// launches by "file:fn".
func builtinLaunches(t *testing.T) map[string][]dryLaunch {
	t.Helper()
	out := map[string][]dryLaunch{}
	for _, m := range allMaths {
		for _, c := range cases.All() {
			for _, l := range planCase(t, m, c) {
				out[l.file+":"+l.fn] = append(out[l.file+":"+l.fn], l)
			}
		}
	}
	return out
}

// resourceExtra is what the resource check adds to the kernels' options.
var resourceExtra = []string{"--ptxas-options=-v"}

// compileResources compiles every kernel file to a CUBIN for l.arch with
// ptxas's report and returns its functions by "file:fn" (device functions
// as "file:fn (device)").
func compileResources(t *testing.T, n *nvrtc, l smLimits) map[string]*ptxasFunc {
	t.Helper()
	tg := target{Arch: l.arch, CUBIN: true}
	out := map[string]*ptxasFunc{}
	for _, f := range kernelFiles() {
		src, err := kernelSource(f)
		if err != nil {
			t.Fatal(err)
		}
		_, log, err := n.compileWith(f, src, tg, resourceExtra)
		if err != nil {
			t.Fatalf("%s for %s: %v", f, tg, err)
		}
		funcs, err := parsePtxasLog(log)
		if err != nil || len(funcs) == 0 {
			t.Fatalf("%s for %s: %v in the log:\n%s", f, tg, err, log)
		}
		for _, fn := range funcs {
			key := f + ":" + fn.name
			if !fn.entry {
				key += " (device)"
			} else if fn.arch != tg.String() {
				t.Errorf("%s: ptxas compiled for %s, want %s", key, fn.arch, tg)
			}
			out[key] = fn
		}
	}
	return out
}

// requireCUBIN skips (fails under CI) unless NVRTC can emit CUBINs for
// every architecture of resourceArchs: ptxas only runs for those.
func requireCUBIN(t *testing.T, n *nvrtc) {
	t.Helper()
	for _, l := range resourceArchs {
		if n.nvrtcGetCUBIN == nil || (n.archs != nil && !slices.Contains(n.archs, l.arch)) {
			unavailable(t, fmt.Sprintf("NVRTC %s cannot emit CUBINs for sm_%d", n.version(), l.arch))
		}
	}
}

// TestResourceUsage compiles every kernel for sm_80 and sm_90 with ptxas's
// report and checks that no function spills registers, and that every
// launch the built-in cases make (on every math) fits one SM: the block's
// registers, allocated per warp in units of 256, within the 64K register
// file, and the kernel's static shared memory plus the launch's dynamic
// bytes within 48 KiB. It logs each kernel's registers, shared memory,
// spills and largest launch.
func TestResourceUsage(t *testing.T) {
	n := requireNVRTC(t)
	requireCUBIN(t, n)
	launches := builtinLaunches(t)
	var table []string
	for _, l := range resourceArchs {
		funcs := compileResources(t, n, l)
		for key := range launches {
			if f := funcs[key]; f == nil || !f.entry {
				t.Errorf("sm_%d: the built-in cases launch %s, which ptxas did not report", l.arch, key)
			}
		}
		keys := make([]string, 0, len(funcs))
		for k := range funcs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, key := range keys {
			f := funcs[key]
			if f.spillSt != 0 || f.spillLd != 0 {
				t.Errorf("%s for sm_%d spills: %d bytes stored, %d loaded (%d registers)", key, l.arch, f.spillSt, f.spillLd, f.registers)
			}
			table = append(table, resourceRow(t, key, f, launches[key], l))
		}
	}
	t.Logf("NVRTC %s, %d launches of the built-in cases (every math) checked\n%-50s %-6s %5s %6s %6s %12s %8s  %s\n%s",
		n.version(), countLaunches(launches), "kernel", "arch", "regs", "smem", "stack", "spill st/ld", "block", "dynamic smem, block registers",
		strings.Join(table, "\n"))
}

// resourceRow checks every launch shape (block and dynamic shared bytes)
// of kernel key against l, reporting each that does not fit, and returns
// the kernel's line of the table.
func resourceRow(t *testing.T, key string, f *ptxasFunc, ls []dryLaunch, l smLimits) string {
	t.Helper()
	largest, shared := 0, 0
	seen := map[[4]uint32]bool{}
	for _, la := range ls {
		shape := [4]uint32{la.block.x, la.block.y, la.block.z, la.shared}
		if seen[shape] {
			continue
		}
		seen[shape] = true
		threads := int(la.block.x * la.block.y * la.block.z)
		if why := launchFits(f, threads, int(la.shared), l); why != "" {
			t.Errorf("%s on sm_%d: block %v with %d bytes dynamic shared memory does not fit: %s", key, l.arch, la.block, la.shared, why)
		}
		largest, shared = max(largest, threads), max(shared, int(la.shared))
	}
	use := "not launched by a built-in case"
	switch {
	case !f.entry:
		use = "device function"
	case len(ls) > 0:
		r := blockRegisters(f.registers, largest, l)
		use = fmt.Sprintf("%d B, %d/%d (%d%%)", shared, r, l.regsPerSM, 100*r/l.regsPerSM)
	}
	return fmt.Sprintf("%-50s sm_%-3d %5d %6d %6d %5d/%-6d %8d  %s", key, l.arch, f.registers, f.smem, f.stack,
		f.spillSt, f.spillLd, largest, use)
}

// countLaunches returns the number of launches in ls.
func countLaunches(ls map[string][]dryLaunch) int {
	n := 0
	for _, l := range ls {
		n += len(l)
	}
	return n
}

// TestResourceParsePtxasLog parses a log as NVRTC 11.8 writes it: entry
// points with and without static shared memory and a constant bank 2, a
// device function that was not inlined, and a spilling kernel.
func TestResourceParsePtxasLog(t *testing.T) {
	const log = `ptxas info    : 272 bytes gmem
ptxas info    : Compiling entry function 'position_sine_f32' for 'sm_80'
ptxas info    : Function properties for position_sine_f32
ptxas         .     48 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 30 registers, 888 bytes cmem[0], 32 bytes cmem[2]
ptxas info    : Function properties for __internal_trig_reduction_slowpathd
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'layernorm_f32' for 'sm_90'
ptxas info    : Function properties for layernorm_f32
ptxas         .     8 bytes stack frame, 12 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 16 registers, 4224 bytes smem
`
	funcs, err := parsePtxasLog(log)
	if err != nil {
		t.Fatal(err)
	}
	want := []ptxasFunc{
		{name: "position_sine_f32", entry: true, arch: "sm_80", registers: 30, used: true, stack: 48},
		{name: "__internal_trig_reduction_slowpathd"},
		{name: "layernorm_f32", entry: true, arch: "sm_90", registers: 16, smem: 4224, used: true, stack: 8, spillSt: 12, spillLd: 4},
	}
	if len(funcs) != len(want) {
		t.Fatalf("%d functions, want %d", len(funcs), len(want))
	}
	for i, f := range funcs {
		if *f != want[i] {
			t.Errorf("function %d: %+v, want %+v", i, *f, want[i])
		}
	}
	if _, err := parsePtxasLog("ptxas info    : Compiling entry function 'k' for 'sm_80'\n"); err == nil {
		t.Error("an entry function without its register line parsed")
	}
}

// TestResourceLaunchFits pins the allocation arithmetic: registers per
// warp rounded up to 256, 64K a SM, 48 KiB of shared memory without
// opt-in.
func TestResourceLaunchFits(t *testing.T) {
	l := resourceArchs[0]
	for _, c := range []struct {
		regs, smem, threads, shared int
		fits                        bool
	}{
		{64, 0, 1024, 0, true},  // 32 warps × 2048 = 65536
		{65, 0, 1024, 0, false}, // 65·32 = 2080 → 2304 a warp: 73728
		{72, 0, 896, 0, true},   // 28 warps × 2304 = 64512
		{255, 0, 256, 0, true},  // 8 warps × 8192
		{255, 0, 257, 0, false}, // a ninth, partly filled warp
		{32, 16 << 10, 256, 32 << 10, true},
		{32, 16 << 10, 256, 32<<10 + 1, false},
	} {
		f := &ptxasFunc{name: "k", entry: true, registers: c.regs, smem: c.smem}
		if why := launchFits(f, c.threads, c.shared, l); (why == "") != c.fits {
			t.Errorf("%d registers, %d B static, %d threads, %d B dynamic: %q, want fits=%v", c.regs, c.smem, c.threads, c.shared, why, c.fits)
		}
	}
}
