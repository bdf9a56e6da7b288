package cpu

import (
	"math"
	"slices"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
	"vitbench/internal/mutation"
)

// foldedWeight is a weight rebuilt from its tensor and others, packed for
// the GEMM, with the bias that goes with it: a conv weight with its
// BatchNorm folded in (one packed matrix), or a deformable conv's weight
// reordered to its column layout (one packed matrix per group).
type foldedWeight struct {
	versions []uint64 // of the weight, bias and BN tensors it was built from
	pbs      []*kern.PackedB
	pa       *kern.PackedA  // the direct convolution's weight, bias as a last column (instead of pbs); or, with raw, the narrow pointwise product's
	geom     directGeom     // and its padded-image geometry (taps), built once
	wino     *winoWeight    // the Winograd transform of the weight (instead of pbs)
	raw      []float32      // the folded weight [O, C] unpacked, for the pointwise product (instead of pbs)
	blocked  *blockedWeight // the weight for the blocked convolution (instead of pbs)
	tapMajor bool           // pbs holds the weight reordered [O, KH, KW, C] (convTapPairs)
	bias     []float32
	held     int64 // bytes this cache keeps alive
}

func (f *foldedWeight) bytes() int64 { return f.held }

// current reports whether every packed matrix is for the active ISA path.
func (f *foldedWeight) current() bool {
	if f.pa != nil && !f.pa.Current() {
		return false
	}
	if f.wino != nil && !f.wino.current() {
		return false
	}
	for _, pb := range f.pbs {
		if !pb.Current() {
			return false
		}
	}
	return true
}

// InPlace implements bench.InPlacer: a convolution with a residual that
// runs blocked whatever its image's layout (useBlocked: the ResNets'
// convolutions, whose BatchNorm is folded) and whose tiles read each
// residual value just before they write the output there
// (blockedSumsInPlace) may write its output over its residual, its last
// input. Every other node -1, and every node in builds with mutations.
// (A convolution that gets its residual's buffer anyway works on a copy
// of the residual: conv2dBlockedTensors, conv2d.)
func (b *Backend) InPlace(node bench.Node, out int) int {
	c, ok := node.(ops.Conv2d)
	if !ok || !c.Residual || out != 0 || mutation.Enabled || !b.useBlocked(c, false) ||
		!blockedSumsInPlace(c, b.blockedWinograd(c), b.bf16) {
		return -1
	}
	return c.ResidualInput()
}

// blockedWinograd reports whether the blocked convolution c runs as a
// Winograd convolution on this backend: useBlockedWinograd's rule, on the
// float32 backend only (cpu-bf16 runs its blocked convolutions as tiles
// of bf16 pairs).
func (b *Backend) blockedWinograd(c ops.Conv2d) bool { return useBlockedWinograd(c) && !b.bf16 }

// conv2d runs a convolution as an implicit GEMM over its windows
// (token-major, c·KH·KW + ky·KW + kx order, the layout of the weight
// [O, C, KH, KW]), which are never stored as a matrix.
func (b *Backend) conv2d(c ops.Conv2d, in, out []*tensor) error {
	want := []bench.Shape{{c.Batch, c.InChans, c.Height, c.Width}, {c.OutChans, c.InChans, c.KernelH, c.KernelW}}
	perChan := bench.Shape{c.OutChans}
	if c.Bias {
		want = append(want, perChan)
	}
	if c.BN {
		want = append(want, perChan, perChan, perChan, perChan)
	}
	oh, ow := c.OutH(), c.OutW()
	if c.Residual {
		want = append(want, bench.Shape{c.Batch, c.OutChans, oh, ow})
	}
	if err := checkShapes("conv2d", in, want); err != nil {
		return err
	}
	var res []float32
	var resT *tensor
	if c.Residual {
		resT = in[len(in)-1]
		res, in = resT.data, in[:len(in)-1]
	}
	if err := checkShapes("conv2d", out, []bench.Shape{{c.Batch, c.OutChans, oh, ow}}); err != nil {
		return err
	}
	if b.useBlocked(c, in[0].blocked) {
		mode := convBlocked
		if b.blockedWinograd(c) {
			mode = convBlockedWinograd
		}
		fw := b.foldConv(c, in[1:], mode)
		b.conv2dBlockedTensors(c, fw.blocked, in[0], out[0], resT)
		return nil
	}
	out[0].blocked = false
	if in[0].blocked || resT != nil && resT.blocked {
		panic("cpu: conv2d on NCHW with a blocked input") // Enqueue unblocks these
	}
	if resT != nil && resT == out[0] {
		// The output is the residual's buffer (InPlace), which the NCHW
		// paths would overwrite before reading all of it: they add a copy
		// (not from the scratch arena, which they take themselves).
		res = slices.Clone(res)
		b.account(int64(len(res)) * 4)
		defer b.account(-int64(len(res)) * 4)
	}
	if useWinograd(c, b.bf16) {
		fw := b.foldConv(c, in[1:], convWinograd)
		b.conv2dWinograd(c, fw.wino, in[0].data, out[0].data, res)
		return nil
	}
	if usePointwise(c, b.bf16) {
		fw := b.foldConv(c, in[1:], convPointwise)
		if fw.pa != nil && usePointwiseTaps(c) {
			b.conv2dPointwiseTaps(c, fw.pa, fw.bias, in[0].data, out[0].data, res)
			return nil
		}
		b.conv2dPointwise(c, fw.raw, fw.bias, in[0].data, out[0].data, res)
		return nil
	}
	if useDirect(c) && (!b.bf16 || b.directOnBF16(c)) {
		fw := b.foldConv(c, in[1:], convDirect)
		b.conv2dDirect(c, fw.pa, fw.geom, in[0].data, out[0].data, res)
		return nil
	}
	windows, o := oh*ow, c.OutChans
	geom := kern.UnfoldGeom{C: c.InChans, H: c.Height, W: c.Width, KH: c.KernelH, KW: c.KernelW,
		SH: c.StrideH, SW: c.StrideW, PH: c.PadH, PW: c.PadW, DH: c.DilationH, DW: c.DilationW, OH: oh, OW: ow}
	x, y := in[0].data, out[0].data
	var src rowSource
	var fw *foldedWeight
	if useTapPairs(c, b.bf16) {
		fw = b.foldConv(c, in[1:], convTapPairs)
		pairs, release := b.pairScratch(kern.TapPairsLen(geom, c.Batch))
		defer release()
		src = tapPairsOf{b.fillTapPairs(geom, c.Batch, x, pairs)}
	} else {
		fw = b.foldConv(c, in[1:], convWindows)
		src = windowsOf{kern.NewWindowsA(geom, x)}
	}
	act := kern.ActNone
	if c.ReLU && !c.Residual {
		act = kern.ActReLU
	}
	if wholeMap(c) {
		// A small map: the whole output token-major, then one pass into
		// NCHW (storeWhole).
		tok, release := b.scratch(c.Batch * windows * o)
		defer release()
		b.windowsGEMM(src, c.Batch*windows, fw.pbs[0], kern.Epilogue{Bias: fw.bias, Act: act}, tok, nil)
		b.storeWhole(c.Batch, windows, o, tok, y, res, c.ReLU)
		return nil
	}
	// Implicit GEMM: the windows are packed straight from the image; each
	// worker multiplies a chunk of them by the folded weight (bias and ReLU
	// fused) into tokens [rows, O] and writes those into the NCHW output
	// in tiles, adding the residual and applying the ReLU on the way when
	// the node has a residual.
	b.windowsGEMM(src, c.Batch*windows, fw.pbs[0], kern.Epilogue{Bias: fw.bias, Act: act},
		nil, func(r0, r1 int, tok []float32) {
			for r := r0; r < r1; {
				img, l := r/windows, r%windows
				end := min(r1, (img+1)*windows)
				base := img * o * windows
				storeNCHW(end-r, o, tok[(r-r0)*o:], y[base+l:], windows, res, base+l, c.Residual && c.ReLU)
				r = end
			}
		})
	return nil
}

// convPacking is the form foldConv packs a convolution weight in.
type convPacking int

const (
	convWindows         convPacking = iota // kern.PackBT, for the implicit GEMM
	convDirect                             // kern.PackA with the bias column, for the direct convolution
	convWinograd                           // the Winograd transform (winogradWeight)
	convPointwise                          // unpacked, read in place by the pointwise product (and kern.PackA for a narrow one)
	convTapPairs                           // reordered tap-major (kern.TapMajor), then kern.PackBT, for kern.TapPairsA
	convBlocked                            // grouped for kern.ConvBlockedTile (blockedConvWeight)
	convBlockedWinograd                    // transformed, then grouped (blockedWinogradWeight)
)

// mode is the packing f holds.
func (f *foldedWeight) mode() convPacking {
	switch {
	case f.raw != nil:
		return convPointwise
	case f.blocked != nil && f.blocked.winograd:
		return convBlockedWinograd
	case f.blocked != nil:
		return convBlocked
	case f.pa != nil:
		return convDirect
	case f.wino != nil:
		return convWinograd
	case f.tapMajor:
		return convTapPairs
	}
	return convWindows
}

// foldConv returns the conv weight with BatchNorm folded in, packed, and
// its bias: w'[o] = w[o]·s[o], b'[o] = (b[o] − mean[o])·s[o] + beta[o] with
// s[o] = gamma[o]/√(var[o] + eps). It is rebuilt only when one of the
// tensors it reads was uploaded again, or the packing or geometry asked
// for changed. With convDirect the weight is packed for the direct
// convolution instead (kern.PackA, the bias as one more column); with
// convWinograd it is transformed for the Winograd convolution.
func (b *Backend) foldConv(c ops.Conv2d, ws []*tensor, mode convPacking) *foldedWeight {
	w := ws[0]
	versions := make([]uint64, len(ws))
	for i, t := range ws {
		versions[i] = t.version
	}
	if f := w.folded; f != nil && f.current() && slices.Equal(f.versions, versions) && f.mode() == mode &&
		(mode != convDirect || f.geom.c == c) && (mode != convWinograd || f.wino.geom.c == c) {
		return f
	}
	b.dropPacked(w)
	o, k := c.OutChans, c.Cols()
	bias := make([]float32, o)
	if c.Bias {
		copy(bias, ws[1].data)
	}
	wf := w.data
	if c.BN {
		bn := ws[len(ws)-4:]
		gamma, beta, mean, variance := bn[0].data, bn[1].data, bn[2].data, bn[3].data
		wf = make([]float32, o*k)
		for i := 0; i < o; i++ {
			s := float64(gamma[i]) / math.Sqrt(float64(variance[i])+c.BNEps)
			for j, v := range w.data[i*k : (i+1)*k] {
				wf[i*k+j] = float32(float64(v) * s)
			}
			bias[i] = float32((float64(bias[i])-float64(mean[i]))*s + float64(beta[i]))
		}
	}
	switch mode {
	case convPointwise:
		f := &foldedWeight{versions: versions, raw: wf, bias: bias, held: int64(len(bias)) * 4}
		if usePointwiseTaps(c) {
			f.pa = kern.PackA(o, k, wf, k)
			f.held += f.pa.Bytes()
		}
		if c.BN {
			f.held += int64(len(wf)) * 4 // without BN, raw is the tensor's own data
		}
		w.folded = f
		b.account(f.bytes())
		return f
	case convWinograd:
		f := &foldedWeight{versions: versions, wino: winogradWeight(newWinoGeom(c, b.threads), wf, bias), bias: bias}
		f.held = f.wino.bytes()
		w.folded = f
		b.account(f.bytes())
		return f
	case convBlocked, convBlockedWinograd:
		bw := blockedConvWeight
		if mode == convBlockedWinograd {
			bw = blockedWinogradWeight
		}
		f := &foldedWeight{versions: versions, blocked: bw(c, wf, bias), bias: bias}
		if b.bf16 {
			f.blocked.roundPairs(c.OutChans / kern.BlockLanes)
		}
		f.held = f.blocked.bytes()
		w.folded = f
		b.account(f.bytes())
		return f
	case convDirect:
		pa := directWeight(o, k, wf, bias)
		f := &foldedWeight{versions: versions, pa: pa, geom: newDirectGeom(c, b.threads, pa.Rows(), pa.RowTile()), bias: bias}
		f.held = f.pa.Bytes()
		w.folded = f
		b.account(f.bytes())
		return f
	}
	if mode == convTapPairs {
		wf = kern.TapMajor(o, c.InChans, c.KernelH, c.KernelW, wf)
		k = len(wf) / o // with a zero channel when C is odd
	}
	pb := b.packBT(o, k, wf, k)
	f := &foldedWeight{versions: versions, pbs: []*kern.PackedB{pb}, bias: bias, tapMajor: mode == convTapPairs}
	f.held = pb.Bytes() + int64(len(bias))*4
	if pb.Bytes() == 0 && c.BN {
		f.held += int64(len(wf)) * 4 // the Go path multiplies by wf itself
	}
	w.folded = f
	b.account(f.bytes())
	return f
}

// storeNCHW writes tokens tok [rows, o] into NCHW planes,
// dst[ch·ld + i] = tok[i·o + ch] (kern.Transpose); with res it then adds
// res[resOff + ch·ld + i] to each plane's run, and with relu clamps it at
// zero, while the run is in cache.
func storeNCHW(rows, o int, tok, dst []float32, ld int, res []float32, resOff int, relu bool) {
	kern.Transpose(rows, o, tok, o, dst, ld)
	if res == nil {
		return
	}
	for ch := 0; ch < o; ch++ {
		d := dst[ch*ld : ch*ld+rows]
		storeRun(d, res[resOff+ch*ld:resOff+ch*ld+rows], d, relu)
	}
}
