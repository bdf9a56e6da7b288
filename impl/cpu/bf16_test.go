package cpu

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"vitbench/bench"
	"vitbench/bench/accuracy"
	"vitbench/bench/cases"
	"vitbench/bench/ops"
	"vitbench/bench/runner"
	"vitbench/impl/cpu/internal/kern"
)

// TestBF16BackendAvailability: cpu-bf16 runs where the CPU has
// AVX512_BF16 and is NS with the reason everywhere else (the purego build
// included), every op kind of the cpu backend supported or refused alike.
func TestBF16BackendAvailability(t *testing.T) {
	bb, err := bench.OpenBackend("cpu-bf16", 2)
	if err != nil {
		t.Fatal(err)
	}
	b := bb.(*Backend)
	info := b.Info()
	if b.Name() != "cpu-bf16" || info.Name != "cpu-bf16" {
		t.Errorf("name %q, info name %q", b.Name(), info.Name)
	}
	if info.Available != kern.HasBF16() {
		t.Fatalf("available %v, but HasBF16 %v", info.Available, kern.HasBF16())
	}
	err = b.Supports("gemm", bench.Float32)
	if kern.HasBF16() {
		if err != nil {
			t.Errorf("gemm: %v", err)
		}
	} else if info.Reason == "" || err == nil || !strings.Contains(err.Error(), "AVX512_BF16") {
		t.Errorf("without AVX512_BF16: reason %q, Supports %v", info.Reason, err)
	}
	if accuracy.Precision(b.Name()) != "bf16" {
		t.Errorf("cpu-bf16 is not judged by the @bf16 tolerance classes")
	}
}

// TestBF16BackendTwinAndRounding runs cases whose outputs are matrix
// products (a Linear layer, a convolution with BatchNorm and ReLU, a patch
// embedding) on cpu-bf16 with the VDPBF16PS kernels and with their Go twin
// (ISA path go): the outputs must be the same bits. Against the cpu
// backend they, and attention (whose softmax differs between the fp32
// paths, so only this), must differ (the inputs were rounded) by no more
// than bf16's rounding allows. The convolution has bf16DirectMaxOut output
// channels, which cpu-bf16 leaves to the fp32 direct convolution where the
// SIMD paths take it (conv_direct.go: its 28×28 map qualifies) and the Go
// path never does; the limit is lowered so that both go through the bf16
// implicit GEMM, the kernels this test compares. On a CPU with AMX-BF16
// the VDPBF16PS run has the AMX kernel turned off, and the AMX run (whose
// sums are not a chain of float32 roundings) must agree with the twin
// within a few float32 roundings (NMSE below 1e-9).
func TestBF16BackendTwinAndRounding(t *testing.T) {
	if !kern.HasBF16() {
		t.Skip("no AVX512_BF16: kern's tests run the Go twin (TestSgemmBF16MatchesOracle)")
	}
	for _, name := range []string{"gemm/odd_m13_n37_k29", "gemm/b2_m7_n50_k300", "conv2d/volo_stem2_28", "patch_embed/odd_c5_e37_p7", "mhsa/odd_b2_hd20"} {
		bf16 := func() *Backend {
			b := NewBF16(2)
			b.bf16DirectMaxOut = 0
			return b
		}
		amxWas := kern.SetAMX(false)
		simd, _ := run(t, bf16(), name, 3)
		kern.SetAMX(amxWas)
		if kern.HasAMX() {
			amx, _ := run(t, bf16(), name, 3)
			var num, den float64
			for i := range amx {
				d := float64(amx[i] - simd[i])
				num += d * d
				den += float64(simd[i]) * float64(simd[i])
			}
			if nmse := num / den; nmse > 1e-9 || math.IsNaN(nmse) {
				t.Errorf("%s: the AMX kernel's outputs are off the VDPBF16PS ones by NMSE %g", name, nmse)
			}
		}
		prev := kern.SetISA(kern.ISAGo)
		twin, _ := run(t, bf16(), name, 3)
		kern.SetISA(prev)
		fp32, _ := run(t, New(2), name, 3)
		differ := 0
		var num, den float64
		for i := range simd {
			if math.Float32bits(simd[i]) != math.Float32bits(twin[i]) && !strings.HasPrefix(name, "mhsa/") {
				t.Fatalf("%s: out[%d] = %g with VDPBF16PS, %g with the Go twin", name, i, simd[i], twin[i])
			}
			if simd[i] != fp32[i] {
				differ++
			}
			d := float64(simd[i] - fp32[i])
			num += d * d
			den += float64(fp32[i]) * float64(fp32[i])
		}
		if differ < len(simd)/2 {
			t.Errorf("%s: only %d of %d outputs differ from fp32: the products were not rounded to bf16", name, differ, len(simd))
		}
		if nmse := num / den; nmse > 1e-4 {
			t.Errorf("%s: NMSE %g against fp32, beyond bf16 rounding", name, nmse)
		}
	}
}

// TestBF16NarrowDirectConvStaysFP32: a convolution of at most
// bf16DirectMaxOut output channels that the cpu backend runs as a direct
// convolution (VOLO's 64-channel stem, with the NCHW tiles of
// blockedNCHWInput off: on, the cpu backend runs it blocked) runs the
// same fp32 kernel on cpu-bf16, bit for bit; with the limit lowered it
// goes through the bf16 implicit GEMM and differs.
func TestBF16NarrowDirectConvStaysFP32(t *testing.T) {
	if !kern.HasBF16() {
		t.Skip("no AVX512_BF16")
	}
	const name = "conv2d/volo_stem1_64"
	defer func(on bool) { nchwTiles = on }(nchwTiles)
	nchwTiles = false
	fp32, _ := run(t, New(2), name, 5)
	nchwTiles = true
	bf, _ := run(t, NewBF16(2), name, 5)
	gemm := NewBF16(2)
	gemm.bf16DirectMaxOut = 0
	viaGEMM, _ := run(t, gemm, name, 5)
	same, nonzero := 0, 0
	for i := range fp32 {
		if math.Float32bits(bf[i]) != math.Float32bits(fp32[i]) {
			t.Fatalf("out[%d] = %g on cpu-bf16, %g on cpu", i, bf[i], fp32[i])
		}
		if fp32[i] != 0 { // after the ReLU
			nonzero++
			if viaGEMM[i] == fp32[i] {
				same++
			}
		}
	}
	if same > nonzero/2 {
		t.Errorf("through the bf16 GEMM %d of %d nonzero outputs equal fp32's: not rounded", same, nonzero)
	}
}

// TestBF16DirectLimitWithTapPairs: with an even channel count a
// convolution's windows come as tap pairs on cpu-bf16, and the fp32
// direct convolution keeps only those of at most bf16TapDirectMaxOut
// output channels: 32→32 gives the cpu backend's bits, 32→64 goes
// through the bf16 GEMM (rounded: most outputs differ, within bf16's
// rounding of the fp32 ones). Winograd is off for both (VITBENCH_CONV
// nowinograd).
func TestBF16DirectLimitWithTapPairs(t *testing.T) {
	if !kern.HasBF16() {
		t.Skip("no AVX512_BF16")
	}
	// Off Intel the cpu backend's rule sends 32→32 at 28×28 to its
	// Winograd path; the claim is about the direct convolution.
	defer func(p string) { convPath = p }(convPath)
	convPath = "nowinograd"
	for _, out := range []int{bf16TapDirectMaxOut, 2 * bf16TapDirectMaxOut} {
		params := fmt.Sprintf(`{"in_chans": 32, "out_chans": %d, "img_size": 28, "kernel_size": 3, "stride": 1, "padding": 1, "bn": true, "relu": true}`, out)
		c := cases.Case{Name: fmt.Sprintf("conv2d/32_%d", out), Op: "conv2d", Batch: 1, Params: json.RawMessage(params)}
		s, err := c.Spec(0)
		if err != nil {
			t.Fatal(err)
		}
		if conv, ok := s.Graph().Steps[0].Node.(ops.Conv2d); !ok || !useDirect(conv) {
			t.Fatalf("%s: not a direct convolution on the cpu backend", c.Name)
		}
		data := runner.SynthData(s, 4)
		nchw := New(2)
		nchw.nchwOnly = true // the direct convolution, not the blocked one
		fp32, bf := outputsOf(t, nchw, s, data)["out"], outputsOf(t, NewBF16(2), s, data)["out"]
		same, nonzero := 0, 0
		var num, den float64
		for i := range fp32 {
			if fp32[i] != 0 {
				nonzero++
				if math.Float32bits(bf[i]) == math.Float32bits(fp32[i]) {
					same++
				}
			}
			d := float64(bf[i] - fp32[i])
			num, den = num+d*d, den+float64(fp32[i])*float64(fp32[i])
		}
		switch {
		case out <= bf16TapDirectMaxOut && (same != nonzero || num != 0):
			t.Errorf("%s: %d of %d nonzero outputs equal the cpu backend's: not its direct convolution", c.Name, same, nonzero)
		case out > bf16TapDirectMaxOut && same > nonzero/2:
			t.Errorf("%s: %d of %d nonzero outputs equal the cpu backend's: not rounded to bf16", c.Name, same, nonzero)
		case num/den > 1e-4:
			t.Errorf("%s: NMSE %g against the cpu backend, beyond bf16 rounding", c.Name, num/den)
		}
	}
}
