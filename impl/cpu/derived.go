package cpu

import (
	"slices"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// A graph may assemble a GEMM weight from uploaded ones on every run: DETR
// cuts the q/k and v rows out of in_proj_weight (row_slice), minGPT stacks
// its query, key and value weights (concat). The result lands in a temp
// that every layer shares, so the temp's own packed copy would be rebuilt
// for every layer of every run. Instead such a node records how it
// derived the temp's values (a derivation), and packedWeight keeps one
// packed copy of the temp per derivation: a later run that derives the
// temp from the same sources at the same versions reuses it. When that
// copy exists (and does not read the temp in place), the node does not
// even copy the values: they are filled in only if another node reads the
// temp (deferred, see fillDeferred).

// derivedCache holds the derivations and their packed copies. Nodes run
// one at a time, so it needs no lock.
type derivedCache struct {
	from  map[*tensor]fromRecord    // how the tensor's current values were derived
	packs map[*tensor][]derivedPack // packed copies of the tensor, one per derivation
}

// fromRecord says that a tensor at version ver holds the values d derives;
// deferred marks values not copied in yet.
type fromRecord struct {
	d        *derivation
	ver      uint64
	deferred bool
}

// deriveOp is a deriving node: a row slice [off, off+rows) of a matrix of
// cols columns, or the concatenation of parts tensors of elems values.
type deriveOp struct {
	slice                  bool
	rows, cols, off, elems int
}

// derivation records that a tensor's values are op applied to srcs at
// versions vers.
type derivation struct {
	op   deriveOp
	srcs []*tensor
	vers []uint64
}

// derivedPack is a packed copy of a tensor holding the values from derives.
type derivedPack struct {
	from   *derivation
	packed *kern.PackedB
}

// sliceOp and concatOp are the deriveOps of the nodes.
func sliceOp(n ops.RowSlice) deriveOp {
	return deriveOp{slice: true, rows: n.Rows, cols: n.Cols, off: n.Off}
}
func concatOp(n ops.Concat) deriveOp { return deriveOp{elems: n.Elems} }

// derive computes t = op(srcs) (a row slice or a concatenation, already
// checked by the node), bumps t's version and records the derivation. The
// copy is deferred when a packed copy of t for this derivation exists that
// does not read t's values in place: then a GEMM with t as its weight
// needs none of them.
func (b *Backend) derive(t *tensor, op deriveOp, srcs ...*tensor) {
	b.dropPacked(t)
	t.version++
	if b.derived.from == nil {
		b.derived.from = map[*tensor]fromRecord{}
		b.derived.packs = map[*tensor][]derivedPack{}
	}
	var d *derivation
	deferred := false
	for _, e := range b.derived.packs[t] {
		if e.from.is(op, srcs) {
			d = e.from
			deferred = selfContained(e.packed)
			break
		}
	}
	if d == nil {
		d = &derivation{op: op, srcs: slices.Clone(srcs), vers: make([]uint64, len(srcs))}
		for i, s := range srcs {
			d.vers[i] = s.version
		}
	}
	b.derived.from[t] = fromRecord{d: d, ver: t.version, deferred: deferred}
	if !deferred {
		d.fill(t)
	}
}

// fill copies the values d derives into t.
func (d *derivation) fill(t *tensor) {
	if d.op.slice {
		lo := d.op.off * d.op.cols
		copy(t.data, d.srcs[0].data[lo:lo+d.op.rows*d.op.cols])
		return
	}
	for p, s := range d.srcs {
		copy(t.data[p*d.op.elems:(p+1)*d.op.elems], s.data)
	}
}

// selfContained reports whether a packed copy holds its values rather than
// reading its tensor in place (the Go path's Bᵀ does).
func selfContained(p *kern.PackedB) bool { return p.BF16() || p.PanelWidth() > 1 }

// is reports whether d derives op(srcs) at the sources' current versions.
func (d *derivation) is(op deriveOp, srcs []*tensor) bool {
	if d.op != op || len(d.srcs) != len(srcs) {
		return false
	}
	for i, s := range srcs {
		if d.srcs[i] != s || d.vers[i] != s.version {
			return false
		}
	}
	return true
}

// sourcesCurrent reports whether every source is still allocated at the
// version d recorded.
func (d *derivation) sourcesCurrent() bool {
	for i, s := range d.srcs {
		if s.data == nil || s.version != d.vers[i] {
			return false
		}
	}
	return true
}

// derivedNow returns t's derivation and whether t still holds its values
// (possibly deferred): t not written since, and the sources unchanged.
func (b *Backend) derivedNow(t *tensor) (fromRecord, bool) {
	r, ok := b.derived.from[t]
	return r, ok && r.ver == t.version && r.d.sourcesCurrent()
}

// fillDeferred copies in t's values if their copy was deferred. Enqueue
// calls it for every input of a node, but for a GEMM's weight that has
// its packed copy (derivedPacked), and Download for what it reads.
func (b *Backend) fillDeferred(t *tensor) {
	if r, ok := b.derivedNow(t); ok && r.deferred {
		r.d.fill(t)
		r.deferred = false
		b.derived.from[t] = r
	}
}

// derivedPacked returns the packed copy of t kept for its current
// derivation, packing it with pack (and keeping it) when there is none or
// fits rejects the one kept; ok is false when t's values are not a
// current derivation (written since, or a source changed). On the Go path
// the copy may read t's values in place, which is why copies are kept per
// tensor: whenever t's derivation matches, t holds those values.
func (b *Backend) derivedPacked(t *tensor, fits func(*kern.PackedB) bool, pack func() *kern.PackedB) (p *kern.PackedB, ok bool) {
	r, ok := b.derivedNow(t)
	if !ok {
		return nil, false
	}
	list := b.derived.packs[t]
	keep := list[:0]
	for _, e := range list {
		if !e.from.sourcesCurrent() || (e.from == r.d && !fits(e.packed)) {
			b.account(-e.packed.Bytes())
			continue
		}
		if e.from == r.d {
			p = e.packed
		}
		keep = append(keep, e)
	}
	if p == nil {
		b.fillDeferred(t)
		p = pack()
		keep = append(keep, derivedPack{from: r.d, packed: p})
		b.account(p.Bytes())
	}
	b.derived.packs[t] = keep
	return p, true
}

// hasDerivedPack reports whether derivedPacked would return a kept copy
// of t as the weight [n, k] (transB) or [k, n], without packing.
func (b *Backend) hasDerivedPack(t *tensor, n, k int, transB bool) bool {
	r, ok := b.derivedNow(t)
	if !ok {
		return false
	}
	for _, e := range b.derived.packs[t] {
		if e.from == r.d && b.packedFits(e.packed, n, k, transB) {
			return true
		}
	}
	return false
}

// forgetDerived drops what the cache holds for t: its derivation, its
// packed copies, and every copy derived from t.
func (b *Backend) forgetDerived(t *tensor) {
	if b.derived.from == nil {
		return
	}
	delete(b.derived.from, t)
	for dst, list := range b.derived.packs {
		keep := list[:0]
		for _, e := range list {
			if dst == t || slices.Contains(e.from.srcs, t) {
				b.account(-e.packed.Bytes())
				continue
			}
			keep = append(keep, e)
		}
		if len(keep) == 0 {
			delete(b.derived.packs, dst)
		} else {
			b.derived.packs[dst] = keep
		}
	}
}

// gemmWeightReady reports whether input i of node is a GEMM's weight whose
// packed copy is kept, so the GEMM will not read its values.
func (b *Backend) gemmWeightReady(node bench.Node, i int, t *tensor) bool {
	g, ok := node.(ops.Gemm)
	if !ok || i != 1 {
		return false
	}
	return b.hasDerivedPack(t, g.N, g.K, g.TransB)
}
