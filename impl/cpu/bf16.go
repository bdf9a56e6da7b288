package cpu

import (
	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

func init() {
	bench.RegisterBackend("cpu-bf16", func(threads int) (bench.Backend, error) { return NewBF16(threads), nil })
}

// NewBF16 returns the cpu-bf16 backend: the CPU backend with every matrix
// product in bf16 (docs/cpu-bf16.md). The inputs of linear layers,
// convolutions (as GEMMs), patch embeddings, the deformable ops'
// projections and the attention products (QKᵀ, P·V, the performer's and
// class attention's) are rounded to bf16, to nearest even, and the
// products summed in fp32 by VDPBF16PS (kern.SgemmBF16); weights are
// rounded once, when they are packed after an upload. Everything else runs
// the fp32 kernels of the cpu backend. On a CPU without AVX512_BF16 the
// backend is unavailable (its rows are NS with the reason); on another ISA
// path (-isa) the Go twin of the VDPBF16PS kernels computes the same bits.
func NewBF16(threads int) *Backend {
	b := New(threads)
	b.bf16, b.bf16DirectMaxOut = true, bf16DirectMaxOut
	return b
}

// bf16DirectMaxOut is the most output channels of a convolution that
// cpu-bf16 leaves to the fp32 direct convolution (where the cpu backend
// uses it, conv_direct.go): with so few columns the bf16 implicit GEMM
// rounds and packs every window for two panels of B, and ran 2.5× slower
// than the direct convolution on VOLO's 64-channel stem (paired runs,
// BenchmarkBF16AB on conv2d/volo_stem1_64).
const bf16DirectMaxOut = 64

// bf16TapDirectMaxOut is bf16DirectMaxOut for a convolution whose windows
// come from tap pairs (useTapPairs): copied rather than rounded and
// packed, they make the bf16 GEMM faster than the direct convolution from
// 64 output channels (3×3, 64→64 at 56×56: 0.38 against 0.68 ms; 32→64 at
// 112×112: 1.07 against 1.34 ms), not at 32 (32→32 at 112×112: 0.94
// against 0.68 ms; interleaved runs, two threads, AMX).
const bf16TapDirectMaxOut = 32

// directOnBF16 reports whether cpu-bf16 leaves convolution c, which the
// cpu backend runs as a direct convolution, to it: for few output
// channels (bf16DirectMaxOut, bf16TapDirectMaxOut).
func (b *Backend) directOnBF16(c ops.Conv2d) bool {
	if useTapPairs(c, true) {
		return c.OutChans <= min(b.bf16DirectMaxOut, bf16TapDirectMaxOut)
	}
	return c.OutChans <= b.bf16DirectMaxOut
}

// matmulFn is kern.Sgemm's signature: C = A·op(B) for operands that
// change every call.
type matmulFn func(m, n, k int, a []float32, lda int, b []float32, ldb int, transB bool, c []float32, ldc int)

// matmul returns the product of the backend's precision for operands that
// change every call (attention's).
func (b *Backend) matmul() matmulFn {
	if b.bf16 {
		return kern.SgemmBF16
	}
	return kern.Sgemm
}

// packBT packs a weight B [n, k] (row stride ldb) used as Bᵀ for the
// backend's precision: rounded to bf16 on cpu-bf16.
func (b *Backend) packBT(n, k int, w []float32, ldb int) *kern.PackedB {
	if b.bf16 {
		return kern.PackBTBF16(n, k, w, ldb)
	}
	return kern.PackBT(n, k, w, ldb)
}

// packBN packs B [k, n] (row stride ldb) used as it is, for the backend's
// precision.
func (b *Backend) packBN(n, k int, w []float32, ldb int) *kern.PackedB {
	if b.bf16 {
		return kern.PackBNBF16(n, k, w, ldb)
	}
	return kern.PackBN(n, k, w, ldb)
}

// bf16Unavailable is why cpu-bf16 cannot run here, or "".
func bf16Unavailable() string {
	if kern.HasBF16() {
		return ""
	}
	return "cpu-bf16 needs AVX512_BF16 (VDPBF16PS), which this CPU or build does not have"
}
