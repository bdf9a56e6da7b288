package cuda

import (
	"vitbench/bench/ops"
)

// deformConv2d runs ops.DeformConv2d: per chunk of images the sampled
// columns [nb, C·KH·KW, L] (mask applied), then per weight group the
// batched product out[b, group] = W_g · cols[b, group], and the bias.
func (b *Backend) deformConv2d(dc ops.DeformConv2d, in, out []*tensor) (func() error, error) {
	l := int64(dc.OutH()) * int64(dc.OutW())
	taps := int64(dc.Taps())
	c, o, g, og := int64(dc.InChans), int64(dc.OutChans), int64(dc.Groups), int64(dc.OffsetGroups)
	bsz := int64(dc.Batch)
	img := c * int64(dc.Height) * int64(dc.Width)
	want := []int64{bsz * img, bsz * 2 * og * taps * l}
	if dc.Mask {
		want = append(want, bsz*og*taps*l)
	}
	want = append(want, o*(c/g)*taps)
	if dc.Bias {
		want = append(want, o)
	}
	if err := checkElems("deform_conv2d", "input", in, want...); err != nil {
		return nil, err
	}
	if err := checkElems("deform_conv2d", "output", out, bsz*o*l); err != nil {
		return nil, err
	}
	var mask, bias uint64
	wi := 2
	if dc.Mask {
		mask, wi = in[2].ptr, 3
	}
	if dc.Bias {
		bias = in[wi+1].ptr
	}
	u := dc.Unfold
	geom := &dgeomArg{C: i32(u.InChans), H: i32(u.Height), W: i32(u.Width), KH: i32(u.KernelH), KW: i32(u.KernelW),
		SH: i32(u.StrideH), SW: i32(u.StrideW), PH: i32(u.PadH), PW: i32(u.PadW), DH: i32(u.DilationH), DW: i32(u.DilationW),
		OH: i32(u.OutH()), OW: i32(u.OutW()), OG: i32(dc.OffsetGroups)}
	k := c * taps        // column rows per image
	kg := (c / g) * taps // per weight group
	og0 := o / g
	return func() error {
		nb := max(1, min(bsz, im2colBudget/(k*l*4)))
		parts, release, err := b.scratchParts(nb * k * l * 4)
		if err != nil {
			return err
		}
		defer release()
		cols := parts[0]
		for b0 := int64(0); b0 < bsz; b0 += nb {
			cnt := min(nb, bsz-b0)
			maskAt := uint64(0)
			if mask != 0 {
				maskAt = mask + uint64(b0*og*taps*l)*4
			}
			if err := b.launch1D("deform_conv.cu", "deform_im2col_f32", cnt*k*l, in[0].ptr+uint64(b0*img)*4,
				in[1].ptr+uint64(b0*2*og*taps*l)*4, maskAt, cols, int32(cnt), geom); err != nil {
				return err
			}
			for gi := int64(0); gi < g; gi++ {
				if err := b.sgemm(false, false, int(og0), int(l), int(kg), in[wi].ptr+uint64(gi*og0*kg)*4, int(kg),
					cols+uint64(gi*kg*l)*4, int(l), out[0].ptr+uint64((b0*o+gi*og0)*l)*4, int(l), int(cnt), 0, k*l, o*l); err != nil {
					return err
				}
			}
		}
		if bias == 0 {
			return nil
		}
		return b.launch1D("gemm_epilogue.cu", "nchw_epilogue_f32", bsz*o*l, out[0].ptr, bias, uint64(0), uint64(0),
			uint64(0), uint64(0), float64(0), uint64(0), int32(0), bsz*o*l, i32(dc.OutChans), l)
	}, nil
}

// performerCore runs ops.PerformerCore for all images at once: the
// feature maps φ(k) and φ(q) (cuBLAS products with w, then the exp
// kernel), Σ_t φ(k), kptv = φ(k)ᵀ·v, out = φ(q)·kptv, then the division
// by D + eps.
func (b *Backend) performerCore(p ops.PerformerCore, in, out []*tensor) (func() error, error) {
	t, e, m, bsz := int64(p.Tokens), int64(p.Emb), int64(p.M), int64(p.Batch)
	if err := checkElems("performer_core", "input", in, bsz*t*3*e, m*e); err != nil {
		return nil, err
	}
	if err := checkElems("performer_core", "output", out, bsz*t*e); err != nil {
		return nil, err
	}
	kqv, w, y := in[0].ptr, in[1].ptr, out[0].ptr
	return func() error {
		parts, release, err := b.scratchParts(bsz*t*m*4, bsz*t*m*4, bsz*m*e*4, bsz*m*8)
		if err != nil {
			return err
		}
		defer release()
		kp, qp, kptv, ksum := parts[0], parts[1], parts[2], parts[3]
		for _, f := range []struct {
			dst uint64
			col int64
		}{{kp, 0}, {qp, e}} { // k: columns 0..E, q: E..2E
			if err := b.sgemm(false, true, int(t), int(m), int(e), kqv+uint64(f.col)*4, int(3*e), w, int(e), f.dst, int(m),
				p.Batch, t*3*e, 0, t*m); err != nil {
				return err
			}
			if err := b.launch("performer.cu", "performer_phi_f32", dim3{uint32(bsz * t), 1, 1}, dim3{64, 1, 1}, 0,
				f.dst, kqv+uint64(f.col)*4, i32(3*p.Emb), i32(p.M), i32(p.Emb)); err != nil {
				return err
			}
		}
		if err := b.launch1D("performer.cu", "performer_ksum_f32", bsz*m, kp, ksum, i32(p.Batch), i32(p.Tokens), i32(p.M)); err != nil {
			return err
		}
		if err := b.sgemm(true, false, int(m), int(e), int(t), kp, int(m), kqv+uint64(2*e)*4, int(3*e), kptv, int(e),
			p.Batch, t*m, t*3*e, m*e); err != nil {
			return err
		}
		if err := b.sgemm(false, false, int(t), int(e), int(m), qp, int(m), kptv, int(e), y, int(e), p.Batch, t*m, m*e, t*e); err != nil {
			return err
		}
		return b.launch1D("performer.cu", "performer_norm_f32", bsz*t*e, y, qp, ksum, i32(p.Batch), i32(p.Tokens), i32(p.M),
			i32(p.Emb), float32(p.Eps))
	}, nil
}

// msdPath is how the msdeform sampling kernels read value: V channels a
// thread (one load each), the kernel name suffix, and the conversion
// kernel that first writes value's 16-bit copy into scratch ("" when the
// kernel reads the fp32 tensor itself).
type msdPath struct {
	vec     int
	suffix  string
	convert string
}

// msdPathFor picks the path for math m and head dimension d. FP32 and
// TF32 read fp32 value: float4 loads when d % 4 == 0, else scalar loads.
// BF16 and FP16 read a bf16 / half copy (fp32 weights and sums): 8
// channels a 16-byte load when d % 8 == 0, 4 a 8-byte load when d % 4 == 0
// (the copy is 256-byte aligned and rows are M·d values, so every load is
// aligned); other d fall back to the fp32 kernels.
func msdPathFor(m Math, d int) msdPath {
	if m == BF16 || m == FP16 {
		typ, conv := "_bf16", "f32_to_bf16"
		if m == FP16 {
			typ, conv = "_f16", "f32_to_f16"
		}
		switch {
		case d%8 == 0:
			return msdPath{8, typ + "_v8", conv}
		case d%4 == 0:
			return msdPath{4, typ + "_v4", conv}
		}
	}
	if d%4 == 0 {
		return msdPath{4, "_v4", ""}
	}
	return msdPath{1, "_v1", ""}
}

// msdValue queues what path needs before sampling and returns the value
// address the sampling kernel reads: value itself, or its 16-bit copy (n
// values, 2 bytes each) in scratch, converted by path.convert. The caller
// calls release after queueing the sampling kernel. Runs on the device
// thread.
func (b *Backend) msdValue(path msdPath, value uint64, n int64) (uint64, func(), error) {
	if path.convert == "" {
		return value, func() {}, nil
	}
	parts, release, err := b.scratchParts(n * 2)
	if err != nil {
		return 0, nil, err
	}
	if err := b.launch1D("msdeform.cu", path.convert, n, value, parts[0], n); err != nil {
		release()
		return 0, nil, err
	}
	return parts[0], release, nil
}

// msDeformCore runs ops.MSDeformCore (on BF16/FP16 after value's 16-bit
// copy: msdPathFor).
func (b *Backend) msDeformCore(c ops.MSDeformCore, in, out []*tensor) (func() error, error) {
	lv, err := levelsOf(c.Levels)
	if err != nil {
		return nil, err
	}
	nq := int64(c.Batch) * int64(c.Queries)
	lp := int64(len(c.Levels) * c.Points)
	md := int64(c.Heads) * int64(c.HeadDim)
	if err := checkElems("ms_deform_attn_core", "input", in, int64(c.Batch)*int64(c.Values())*md,
		nq*int64(c.Heads)*lp*2, nq*int64(c.Heads)*lp); err != nil {
		return nil, err
	}
	if err := checkElems("ms_deform_attn_core", "output", out, nq*md); err != nil {
		return nil, err
	}
	path := msdPathFor(b.math, c.HeadDim)
	nv := int64(c.Batch) * int64(c.Values()) * md
	return func() error {
		value, release, err := b.msdValue(path, in[0].ptr, nv)
		if err != nil {
			return err
		}
		defer release()
		return b.launch1D("msdeform.cu", "msdeform_core"+path.suffix, nq*md/int64(path.vec), value, in[1].ptr, in[2].ptr,
			out[0].ptr, i32(c.Batch), i32(c.Queries), i32(c.Heads), i32(c.HeadDim), i32(c.Points), lv)
	}, nil
}

// msDeformSample runs ops.MSDeformSample: softmax, locations and
// sampling fused in one kernel (on BF16/FP16 after value's 16-bit copy:
// msdPathFor).
func (b *Backend) msDeformSample(n ops.MSDeformSample, in, out []*tensor) (func() error, error) {
	c := n.MSDeformCore
	lv, err := levelsOf(c.Levels)
	if err != nil {
		return nil, err
	}
	nq := int64(c.Batch) * int64(c.Queries)
	l := int64(len(c.Levels))
	lp := l * int64(c.Points)
	md := int64(c.Heads) * int64(c.HeadDim)
	s := int64(c.Values())
	want := []int64{int64(c.Batch) * s * md, nq * l * int64(n.RefDims), nq * int64(c.Heads) * lp * 2, nq * int64(c.Heads) * lp}
	if n.Masked {
		want = append(want, int64(c.Batch)*s)
	}
	if err := checkElems("ms_deform_attn", "input", in, want...); err != nil {
		return nil, err
	}
	if err := checkElems("ms_deform_attn", "output", out, nq*md); err != nil {
		return nil, err
	}
	var mask uint64
	if n.Masked {
		mask = in[4].ptr
	}
	path := msdPathFor(b.math, c.HeadDim)
	return func() error {
		value, release, err := b.msdValue(path, in[0].ptr, int64(c.Batch)*s*md)
		if err != nil {
			return err
		}
		defer release()
		return b.launch1D("msdeform.cu", "msdeform_sample"+path.suffix, nq*md/int64(path.vec), value, in[1].ptr, in[2].ptr,
			in[3].ptr, mask, out[0].ptr, i32(c.Batch), i32(c.Queries), i32(c.Heads), i32(c.HeadDim), i32(c.Points),
			i32(n.RefDims), lv)
	}, nil
}
