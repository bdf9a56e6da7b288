package cuda

import (
	"fmt"
	"math"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
	_ "vitbench/impl/cpu"
)

// TestMSDeformPathChoice pins which kernels read value for each math and
// head dimension: fp32 (float4 or scalar loads) on cuda and cuda-tf32; on
// cuda-bf16 and cuda-fp16 a 16-bit copy read 8 or 4 channels a load when
// the head dimension allows it, else the fp32 kernels.
func TestMSDeformPathChoice(t *testing.T) {
	for _, c := range []struct {
		m    Math
		d    int
		want msdPath
	}{
		{FP32, 32, msdPath{4, "_v4", ""}},
		{FP32, 30, msdPath{1, "_v1", ""}},
		{TF32, 32, msdPath{4, "_v4", ""}},
		{TF32, 71, msdPath{1, "_v1", ""}},
		{BF16, 32, msdPath{8, "_bf16_v8", "f32_to_bf16"}},
		{BF16, 8, msdPath{8, "_bf16_v8", "f32_to_bf16"}},
		{BF16, 12, msdPath{4, "_bf16_v4", "f32_to_bf16"}},
		{BF16, 4, msdPath{4, "_bf16_v4", "f32_to_bf16"}},
		{BF16, 30, msdPath{1, "_v1", ""}},
		{BF16, 17, msdPath{1, "_v1", ""}},
		{FP16, 32, msdPath{8, "_f16_v8", "f32_to_f16"}},
		{FP16, 20, msdPath{4, "_f16_v4", "f32_to_f16"}},
		{FP16, 6, msdPath{1, "_v1", ""}},
		{FP16, 71, msdPath{1, "_v1", ""}},
	} {
		if got := msdPathFor(c.m, c.d); got != c.want {
			t.Errorf("%s, D = %d: %+v, want %+v", c.m, c.d, got, c.want)
		}
	}
}

// TestMSDeformDryPaths plans ms_deform_attn_core and ms_deform_attn on a
// recording backend of each math for head dimensions taking each path:
// the 16-bit paths convert exactly value's B·S·M·D elements into scratch
// and the sampling kernel reads that copy (aligned for its loads); the
// fp32 paths read value itself and convert nothing. With NVRTC, every
// launch is checked against its PTX signature too.
func TestMSDeformDryPaths(t *testing.T) {
	var sigs map[string][]ptxParam
	if _, err := loadNVRTC(); err == nil {
		sigs = ptxSignatures(t)
	}
	levels := []ops.Level{{H: 6, W: 4, Start: 0}, {H: 3, W: 2, Start: 24}}
	const valueAt, maskAt = uint64(1 << 32), uint64(3 << 32)
	for _, m := range allMaths {
		for _, d := range []int{32, 12, 6} {
			core := ops.MSDeformCore{Batch: 2, Queries: 5, Heads: 3, HeadDim: d, Points: 2, Levels: levels}
			nv := int64(core.Batch) * int64(core.Values()) * int64(core.Heads) * int64(d)
			lp := int64(len(levels) * core.Points)
			nqm := int64(core.Batch) * int64(core.Queries) * int64(core.Heads)
			tens := func(ptr uint64, n int64) *tensor {
				return &tensor{shape: bench.Shape{int(n)}, dtype: bench.Float32, ptr: ptr, bytes: n * 4}
			}
			nodes := []struct {
				node    bench.Node
				in      []*tensor
				sampler string
			}{
				{core, []*tensor{tens(valueAt, nv), tens(valueAt+1<<28, nqm*lp*2), tens(valueAt+2<<28, nqm*lp)}, "msdeform_core"},
				{ops.MSDeformSample{MSDeformCore: core, RefDims: 4, Masked: true}, []*tensor{tens(valueAt, nv),
					tens(valueAt+1<<28, int64(core.Batch*core.Queries*len(levels)*4)), tens(valueAt+2<<28, nqm*lp*2),
					tens(valueAt+3<<28, nqm*lp), tens(maskAt, int64(core.Batch*core.Values()))}, "msdeform_sample"},
			}
			for _, n := range nodes {
				b := dryBackend(m)
				out := []*tensor{tens(5<<32, nqm*int64(d))}
				run, err := b.plan(n.node, n.in, out)
				if err != nil {
					t.Fatalf("%s D=%d %s: %v", m, d, n.node.OpName(), err)
				}
				if err := run(); err != nil {
					t.Fatalf("%s D=%d %s: %v", m, d, n.node.OpName(), err)
				}
				what := m.String() + " " + n.node.OpName()
				path := msdPathFor(m, d)
				ls := b.dry.launches
				want := 1
				if path.convert != "" {
					want = 2
				}
				if len(ls) != want {
					t.Errorf("%s D=%d: %d launches, want %d", what, d, len(ls), want)
					continue
				}
				sample := ls[len(ls)-1]
				if sample.fn != n.sampler+path.suffix {
					t.Errorf("%s D=%d: samples with %s, want %s", what, d, sample.fn, n.sampler+path.suffix)
				}
				readsFrom := sample.args[0].(uint64)
				if path.convert == "" {
					if readsFrom != valueAt {
						t.Errorf("%s D=%d: reads value at %#x, want the tensor at %#x", what, d, readsFrom, valueAt)
					}
				} else {
					conv := ls[0]
					if conv.fn != path.convert || conv.args[0].(uint64) != valueAt || conv.args[2].(int64) != nv {
						t.Errorf("%s D=%d: conversion %s(%v), want %s(%#x, _, %d)", what, d, conv.fn, conv.args, path.convert, valueAt, nv)
					}
					if dst := conv.args[1].(uint64); readsFrom != dst || dst%16 != 0 {
						t.Errorf("%s D=%d: converts into %#x, samples from %#x (16-byte aligned copy wanted)", what, d, dst, readsFrom)
					}
				}
				if sigs != nil {
					checkLaunches(t, what, m, ls, sigs, map[string]bool{})
				}
			}
		}
	}
}

// roundTo rounds x to nearest even with bits significant bits, exponents
// down to minExp (subnormal quantum 2^(minExp−bits+1)) and overflow at
// maxAbs: bfloat16 is (8, −126, 2^128·(1−2^−9)), half (11, −14, 65520).
func roundTo(x float32, bits, minExp int, maxAbs float64) float32 {
	v := float64(x)
	if math.IsNaN(v) || math.IsInf(v, 0) || v == 0 {
		return x
	}
	if math.Abs(v) >= maxAbs {
		return float32(math.Inf(int(math.Copysign(1, v))))
	}
	_, e := math.Frexp(math.Abs(v)) // |v| = f·2^e, f in [0.5, 1): leading bit 2^(e−1)
	q := math.Ldexp(1, max(e-1, minExp)-(bits-1))
	return float32(math.RoundToEven(v/q) * q)
}

// TestDeviceMSDeform16IfPresent (GPU only): ms_deform_attn_core and
// ms_deform_attn on cuda-bf16 and cuda-fp16 equal the CPU backend run on
// value rounded to bf16 / half in Go (fp32 summation-order differences
// only), for head dimensions on the 8-wide, 4-wide and fp32 paths.
func TestDeviceMSDeform16IfPresent(t *testing.T) {
	testMSDeform16(t, func(m Math) *Backend {
		b := Open(0, m)
		if !b.Info().Available {
			b.Close()
			t.Skipf("no CUDA device: %s", b.Info().Reason)
		}
		return b
	})
}

// TestEmulatorMSDeform16 is TestDeviceMSDeform16IfPresent on the CUDA
// emulator: the 16-bit copies of value and the 8-wide and 4-wide gathers
// (D = 32, 12), which no committed fixture's head dimension reaches on the
// 4-wide path, and the fp32 fallback (D = 6).
func TestEmulatorMSDeform16(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles kernels with g++")
	}
	testMSDeform16(t, func(m Math) *Backend {
		b := OpenEmulator(m)
		if !b.Info().Available {
			b.Close()
			t.Fatalf("%s unavailable: %s", b.Name(), b.Info().Reason)
		}
		return b
	})
}

// testMSDeform16 runs the comparison on the backends open returns, for
// the sampling core (given locations and weights) and the fused sampling
// of ms_deform_attn (reference points, offsets and logits, 2-d and 4-d
// references, with and without a padding mask).
func testMSDeform16(t *testing.T, open func(Math) *Backend) {
	cpu, err := bench.OpenBackend("cpu", 1)
	if err != nil {
		t.Fatalf("no cpu backend registered in this test binary: %v", err)
	}
	defer cpu.Close()
	for _, m := range []Math{BF16, FP16} {
		b := open(m)
		round := func(x float32) float32 { return roundTo(x, 8, -126, math.Ldexp(1-math.Ldexp(1, -9), 128)) }
		if m == FP16 {
			round = func(x float32) float32 { return roundTo(x, 11, -14, 65520) }
		}
		levels := []ops.Level{{H: 6, W: 4, Start: 0}, {H: 3, W: 2, Start: 24}}
		for _, d := range []int{32, 12, 6} {
			core := ops.MSDeformCore{Batch: 2, Queries: 7, Heads: 3, HeadDim: d, Points: 3, Levels: levels}
			nq, lp := core.Batch*core.Queries, len(levels)*core.Points
			nqm := nq * core.Heads
			wave := func(n int, f func(i int) float32) []float32 {
				out := make([]float32, n)
				for i := range out {
					out[i] = f(i)
				}
				return out
			}
			value := wave(core.Batch*core.Values()*core.Heads*d, func(i int) float32 { return float32(math.Sin(float64(i)*0.37)) * 3 })
			value[0], value[1] = 1e-6, -7e-8 // half subnormals
			path := msdPathFor(m, d)
			rounded := make([]float32, len(value))
			for i, v := range value {
				rounded[i] = v
				if path.convert != "" {
					rounded[i] = round(v)
				}
			}
			loc := wave(nqm*lp*2, func(i int) float32 { return float32(0.5 + 0.6*math.Sin(float64(i)*1.3)) })
			attn := wave(nqm*lp, func(i int) float32 { return float32(0.5 + 0.5*math.Cos(float64(i)*0.9)) })
			mask := wave(core.Batch*core.Values(), func(i int) float32 { return float32(i % 5 / 4) })
			valueShape := bench.Shape{core.Batch, core.Values(), core.Heads, d}
			outShape := bench.Shape{core.Batch, core.Queries, core.Heads * d}
			type nodeCase struct {
				name   string
				node   bench.Node
				shapes []bench.Shape
				data   [][]float32 // after value
			}
			nodes := []nodeCase{{"core", core,
				[]bench.Shape{{core.Batch, core.Queries, core.Heads, len(levels), core.Points, 2},
					{core.Batch, core.Queries, core.Heads, len(levels), core.Points}},
				[][]float32{loc, attn}}}
			for _, r := range []int{2, 4} {
				ref := wave(nq*len(levels)*r, func(i int) float32 { return float32(0.45 + 0.4*math.Sin(float64(i)*0.7)) })
				off := wave(nqm*lp*2, func(i int) float32 { return float32(1.5 * math.Sin(float64(i)*0.53)) })
				logits := wave(nqm*lp, func(i int) float32 { return float32(2 * math.Cos(float64(i)*0.31)) })
				shapes := []bench.Shape{{core.Batch, core.Queries, len(levels), r},
					{core.Batch, core.Queries, core.Heads * lp * 2}, {core.Batch, core.Queries, core.Heads * lp}}
				data := [][]float32{ref, off, logits}
				masked := r == 4
				if masked {
					shapes = append(shapes, bench.Shape{core.Batch, core.Values()})
					data = append(data, mask)
				}
				nodes = append(nodes, nodeCase{fmt.Sprintf("sample R=%d masked=%v", r, masked),
					ops.MSDeformSample{MSDeformCore: core, RefDims: r, Masked: masked}, shapes, data})
			}
			for _, nc := range nodes {
				vshape := valueShape
				if _, ok := nc.node.(ops.MSDeformSample); ok {
					vshape = bench.Shape{core.Batch, core.Values(), core.Heads * d} // the projected value
				}
				run := func(be bench.Backend, val []float32) []float32 {
					var ins []bench.Tensor
					shapes := append([]bench.Shape{vshape}, nc.shapes...)
					for i, data := range append([][]float32{val}, nc.data...) {
						tt, err := be.Alloc(shapes[i], bench.Float32)
						if err != nil {
							t.Fatal(err)
						}
						if err := be.Upload(tt, data); err != nil {
							t.Fatal(err)
						}
						ins = append(ins, tt)
					}
					out, err := be.Alloc(outShape, bench.Float32)
					if err != nil {
						t.Fatal(err)
					}
					if err := be.Enqueue(nc.node, ins, []bench.Tensor{out}); err != nil {
						t.Fatalf("%s %s: %v", be.Name(), nc.name, err)
					}
					got := make([]float32, nqm*d)
					if err := be.Download(out, got); err != nil {
						t.Fatal(err)
					}
					for _, tt := range append(ins, out) {
						be.Free(tt)
					}
					return got
				}
				got, want := run(b, value), run(cpu, rounded)
				for i := range got {
					if diff := math.Abs(float64(got[i] - want[i])); diff > 1e-5*(1+math.Abs(float64(want[i]))) {
						t.Fatalf("%s %s D=%d (%s): out[%d] = %v, want %v (CPU on the rounded value)", m, nc.name, d, path.suffix, i, got[i], want[i])
					}
				}
			}
		}
		b.Close()
	}
}

// TestRoundTo pins the Go rounding the device test compares with.
func TestRoundTo(t *testing.T) {
	bf := func(x float32) float32 { return roundTo(x, 8, -126, math.Ldexp(1-math.Ldexp(1, -9), 128)) }
	h := func(x float32) float32 { return roundTo(x, 11, -14, 65520) }
	for _, c := range []struct {
		f       func(float32) float32
		in, out float32
	}{
		{bf, 1 + 1.0/256, 1},                                              // tie, even below
		{bf, 1 + 3.0/256, 1 + 4.0/256},                                    // tie, even above
		{bf, 1 + 1.0/256 + 1.0/65536, 1 + 2.0/256},                        // above the tie
		{bf, -3.14159, -3.140625},                                         // 0x4049 → 3.140625
		{bf, math.MaxFloat32, float32(math.Inf(1))},                       // past the largest bf16
		{h, 1 + 1.0/2048, 1},                                              // tie, even below
		{h, 1 + 3.0/2048, 1 + 4.0/2048},                                   // tie, even above
		{h, 65519, 65504},                                                 // largest half
		{h, 65520, float32(math.Inf(1))},                                  // overflow
		{h, 1e-6, float32(17 * math.Ldexp(1, -24))},                       // subnormal: 16.78 quanta
		{h, float32(math.Ldexp(1, -25)), 0},                               // half a quantum: tie to 0
		{h, float32(3 * math.Ldexp(1, -25)), float32(math.Ldexp(1, -23))}, // 1.5 quanta: tie to 2
	} {
		if got := c.f(c.in); got != c.out {
			t.Errorf("round(%v) = %v, want %v", c.in, got, c.out)
		}
	}
}
