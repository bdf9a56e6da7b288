package cuda

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"vitbench/bench"
	"vitbench/bench/cases"
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

// dryBackend is an available backend that records instead of launching.
func dryBackend() *Backend {
	return &Backend{name: "cuda", info: bench.Info{Name: "cuda", Available: true}, dry: &dryRun{next: 1 << 40}}
}

// TestDryRunEveryBuiltinCase plans every step of every built-in case's
// graph on a recording backend, with tensors of the graph's shapes: the
// dispatch knows every node, accepts the shapes the graphs produce, and
// each kernel launch passes exactly the parameters its PTX declares (count,
// integer or float, width, by-value struct sizes), in grids the hardware
// accepts. This is the CUDA backend's device-free check of everything but
// the arithmetic.
func TestDryRunEveryBuiltinCase(t *testing.T) {
	sigs := ptxSignatures(t)
	used := map[string]bool{}
	for _, c := range cases.All() {
		spec, err := c.Spec(0)
		if err != nil {
			t.Fatal(err)
		}
		b := dryBackend()
		g := spec.Graph()
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
				t.Errorf("%s step %d: %v", c.Name, i, err)
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
			if err != nil {
				t.Errorf("%s step %d (%s): %v", c.Name, i, st.Node.OpName(), err)
				continue
			}
			if err := run(); err != nil {
				t.Errorf("%s step %d (%s): %v", c.Name, i, st.Node.OpName(), err)
			}
		}
		for _, l := range b.dry.launches {
			key := l.file + ":" + l.fn
			used[key] = true
			sig, ok := sigs[key]
			if !ok {
				t.Errorf("%s: launches %s, which no kernel source defines", c.Name, key)
				continue
			}
			if err := matchSignature(l.args, sig); err != nil {
				t.Errorf("%s: %s: %v", c.Name, key, err)
			}
		}
	}
	var unused []string
	for k := range sigs {
		if !used[k] {
			unused = append(unused, k)
		}
	}
	t.Logf("%d kernels launched by the built-in cases; not launched by any: %v", len(used), unused)
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
