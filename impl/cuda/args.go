package cuda

import (
	"fmt"
	"math"

	"vitbench/bench/ops"
)

// The structs kernels take by value; each mirrors a struct of the same
// layout in kernels/*.cu (int is int32 there).

// levelsArg is struct Levels of common.cuh.
type levelsArg struct {
	N        int32
	H, W, St [64]int32
}

// levelsOf converts the multi-scale level table.
func levelsOf(ls []ops.Level) (*levelsArg, error) {
	if len(ls) == 0 || len(ls) > 64 {
		return nil, fmt.Errorf("%d levels (1..64 supported)", len(ls))
	}
	a := &levelsArg{N: int32(len(ls))}
	for i, l := range ls {
		if int64(l.Start)+int64(l.H)*int64(l.W) > math.MaxInt32 {
			return nil, fmt.Errorf("level %d ends past 2³¹ rows", i)
		}
		a.H[i], a.W[i], a.St[i] = int32(l.H), int32(l.W), int32(l.Start)
	}
	return a, nil
}

// geomArg is struct Geom of windows.cu.
type geomArg struct {
	C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW int32
}

// geomOf converts an unfold geometry.
func geomOf(u ops.Unfold) *geomArg {
	return &geomArg{C: int32(u.InChans), H: int32(u.Height), W: int32(u.Width), KH: int32(u.KernelH), KW: int32(u.KernelW),
		SH: int32(u.StrideH), SW: int32(u.StrideW), PH: int32(u.PadH), PW: int32(u.PadW),
		DH: int32(u.DilationH), DW: int32(u.DilationW), OH: int32(u.OutH()), OW: int32(u.OutW())}
}

// dgeomArg is struct DGeom of deform_conv.cu.
type dgeomArg struct {
	C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, OG int32
}

// sineTable is struct SineTable of common.cuh.
type sineTable [128]float32

// newSineTable returns dim_t[i] = 10000^(2⌊i/2⌋/128), computed in float32
// as the CPU backend does.
func newSineTable() *sineTable {
	var t sineTable
	for i := range t {
		t[i] = float32(math.Pow(10000, float64(float32(2*(i/2))/128)))
	}
	return &t
}
