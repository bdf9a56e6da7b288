package cuda

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"vitbench/bench"
	"vitbench/bench/cases"
	"vitbench/bench/runner"
)

// ptxParam is one kernel parameter as NVRTC's PTX declares it: its type
// (".u64", ".f32", ".b8" for a struct) and size in bytes.
type ptxParam struct {
	typ  string
	size int
}

var (
	ptxEntry   = regexp.MustCompile(`\.entry\s+(\w+)\s*\(([^)]*)\)`)
	ptxParamRE = regexp.MustCompile(`\.param\s+(?:\.align\s+\d+\s+)?(\.\w+)\s+\w+(?:\[(\d+)\])?`)
)

// ptxSignatures compiles every kernel source to PTX and returns each
// kernel's parameter list.
func ptxSignatures(t *testing.T) map[string][]ptxParam {
	n := requireNVRTC(t)
	sigs := map[string][]ptxParam{}
	for _, f := range kernelFiles() {
		src, err := kernelSource(f)
		if err != nil {
			t.Fatal(err)
		}
		ptx, err := n.compile(f, src, target{Arch: 80})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ptxEntry.FindAllStringSubmatch(string(ptx), -1) {
			var ps []ptxParam
			for _, p := range ptxParamRE.FindAllStringSubmatch(m[2], -1) {
				size := map[string]int{".u64": 8, ".s64": 8, ".f64": 8, ".b64": 8, ".u32": 4, ".s32": 4, ".f32": 4, ".b32": 4}[p[1]]
				if p[2] != "" {
					size, _ = strconv.Atoi(p[2])
				}
				ps = append(ps, ptxParam{p[1], size})
			}
			sigs[f+":"+m[1]] = ps
		}
	}
	return sigs
}

// argMatches reports whether a Go launch argument fits a PTX parameter.
func argMatches(a any, p ptxParam) bool {
	switch v := a.(type) {
	case uint64, int64:
		return p.typ == ".u64" || p.typ == ".s64" || p.typ == ".b64"
	case int32:
		return p.typ == ".u32" || p.typ == ".s32" || p.typ == ".b32"
	case float32:
		return p.typ == ".f32"
	case float64:
		return p.typ == ".f64"
	case *levelsArg:
		return p.typ == ".b8" && p.size == int(unsafe.Sizeof(*v))
	case *geomArg:
		return p.typ == ".b8" && p.size == int(unsafe.Sizeof(*v))
	case *dgeomArg:
		return p.typ == ".b8" && p.size == int(unsafe.Sizeof(*v))
	case *sineTable:
		return p.typ == ".b8" && p.size == int(unsafe.Sizeof(*v))
	}
	return false
}

// dryBackend is an available backend with math m that records instead of
// launching.
func dryBackend(m Math) *Backend {
	return &Backend{name: m.BackendName(), math: m, info: bench.Info{Name: m.BackendName(), Available: true},
		dry: &dryRun{next: 1 << 40}}
}

// allMaths are the four CUDA backends' math modes.
var allMaths = []Math{FP32, TF32, BF16, FP16}

// kernelMathOK reports whether a backend with math m may launch kernel fn:
// the 16-bit msdeform kernels and conversions only on their own math.
func kernelMathOK(m Math, fn string) bool {
	switch {
	case strings.Contains(fn, "bf16"):
		return m == BF16
	case strings.Contains(fn, "f16"):
		return m == FP16
	}
	return true
}

// TestDryRunEveryBuiltinCase plans every step of every built-in case's
// graph on a recording backend, with tensors of the graph's shapes: the
// dispatch knows every node, accepts the shapes the graphs produce, and
// each kernel launch passes exactly the parameters its PTX declares (count,
// integer or float, width, by-value struct sizes), in grids the hardware
// accepts. Every case is planned on each of the four maths (the bf16 and
// fp16 backends take other msdeform kernels). This is the CUDA backend's
// device-free check of everything but the arithmetic.
func TestDryRunEveryBuiltinCase(t *testing.T) {
	sigs := ptxSignatures(t)
	used := map[string]bool{}
	for _, m := range allMaths {
		dryRunCases(t, m, sigs, used)
	}
	// The built-in Deformable DETR graphs have 32-channel heads: the 16-bit
	// paths must have been taken.
	for _, k := range []string{"f32_to_bf16", "f32_to_f16", "msdeform_core_bf16_v8", "msdeform_core_f16_v8",
		"msdeform_sample_bf16_v8", "msdeform_sample_f16_v8", "msdeform_core_v4", "msdeform_sample_v4"} {
		if !used["msdeform.cu:"+k] {
			t.Errorf("no built-in case launches msdeform.cu:%s on any math", k)
		}
	}
	var unused []string
	for k := range sigs {
		if !used[k] {
			unused = append(unused, k)
		}
	}
	sort.Strings(unused)
	t.Logf("%d kernels launched by the built-in cases; not launched by any: %v", len(used), unused)
}

// dryRunCases plans every built-in case on a recording backend with math
// m, checks each launch against sigs and adds the kernels to used.
func dryRunCases(t *testing.T, m Math, sigs map[string][]ptxParam, used map[string]bool) {
	t.Helper()
	for _, c := range cases.All() {
		checkLaunches(t, c.Name+" on "+m.String(), m, planCase(t, m, c), sigs, used)
	}
}

// planCase plans every step of case c on a recording backend with math m
// and returns its launches; a step that is unsupported or does not plan
// fails the test, and the other steps still run.
func planCase(t *testing.T, m Math, c cases.Case) []dryLaunch {
	t.Helper()
	spec, err := c.Spec(0)
	if err != nil {
		t.Fatal(err)
	}
	b := dryBackend(m)
	g := runner.GraphFor(b, spec, bench.Float32)
	vals := map[string]*tensor{}
	addr := uint64(1 << 32)
	for _, list := range [][]bench.ArraySpec{spec.Inputs(), spec.Weights(), g.Temps, spec.Outputs()} {
		for _, a := range list {
			vals[a.Name] = &tensor{b: b, shape: a.Shape, dtype: bench.Float32, ptr: addr, bytes: a.Shape.Elems() * 4}
			addr += uint64(a.Shape.Elems()*4+255) / 256 * 256
		}
	}
	for i, st := range g.Steps {
		if err := b.Supports(st.Node.OpName(), bench.Float32); err != nil {
			t.Errorf("%s on %s step %d: %v", c.Name, m, i, err)
			continue
		}
		var in, out []*tensor
		for _, v := range st.In {
			in = append(in, vals[v])
		}
		for _, v := range st.Out {
			out = append(out, vals[v])
		}
		run, err := b.plan(st.Node, in, out)
		if err == nil {
			err = run()
		}
		if err != nil {
			t.Errorf("%s on %s step %d (%s): %v", c.Name, m, i, st.Node.OpName(), err)
		}
	}
	return b.dry.launches
}

// checkLaunches checks recorded launches against the PTX signatures and
// the math's kernels, and adds them to used.
func checkLaunches(t *testing.T, what string, m Math, launches []dryLaunch, sigs map[string][]ptxParam, used map[string]bool) {
	t.Helper()
	for _, l := range launches {
		key := l.file + ":" + l.fn
		used[key] = true
		if !kernelMathOK(m, l.fn) {
			t.Errorf("%s: launches %s, a kernel of another math", what, key)
		}
		sig, ok := sigs[key]
		if !ok {
			t.Errorf("%s: launches %s, which no kernel source defines", what, key)
			continue
		}
		if err := matchSignature(l.args, sig); err != nil {
			t.Errorf("%s: %s: %v", what, key, err)
		}
	}
}

func matchSignature(args []any, sig []ptxParam) error {
	if len(args) != len(sig) {
		return fmt.Errorf("%d arguments for %d parameters", len(args), len(sig))
	}
	var bad []string
	for i, a := range args {
		if !argMatches(a, sig[i]) {
			bad = append(bad, fmt.Sprintf("argument %d is %T, parameter is %s[%d]", i, a, sig[i].typ, sig[i].size))
		}
	}
	if bad != nil {
		return fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return nil
}

// TestStructLayouts pins the by-value structs to the C layouts.
func TestStructLayouts(t *testing.T) {
	for name, c := range map[string][2]uintptr{
		"Levels":    {unsafe.Sizeof(levelsArg{}), 4 + 3*64*4},
		"Geom":      {unsafe.Sizeof(geomArg{}), 13 * 4},
		"DGeom":     {unsafe.Sizeof(dgeomArg{}), 14 * 4},
		"SineTable": {unsafe.Sizeof(sineTable{}), 128 * 4},
	} {
		if c[0] != c[1] {
			t.Errorf("%s is %d bytes, want %d", name, c[0], c[1])
		}
	}
}
