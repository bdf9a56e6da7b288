package cuda

import (
	"fmt"
	"runtime"
	"unsafe"

	"vitbench/bench"
)

// tensor is a buffer in device memory.
type tensor struct {
	b     *Backend
	shape bench.Shape
	dtype bench.DType
	ptr   devicePtr
	bytes int64
	freed bool
}

func (t *tensor) Shape() bench.Shape { return t.shape }
func (t *tensor) DType() bench.DType { return t.dtype }

// elems is the number of values of t.
func (t *tensor) elems() int64 { return t.shape.Elems() }

// account adds delta bytes to the allocator's current total and raises the
// peak.
func (b *Backend) account(delta int64) {
	b.mem.Lock()
	b.current += delta
	b.peak = max(b.peak, b.current)
	b.mem.Unlock()
}

// Memory implements bench.Backend: tensors and, while a node uses it,
// kernel scratch space. The L2-flush buffer and cuBLAS's own workspace are
// not counted.
func (b *Backend) Memory() bench.MemStats {
	b.mem.Lock()
	defer b.mem.Unlock()
	return bench.MemStats{Current: b.current, Peak: b.peak}
}

// ResetPeak implements bench.Backend.
func (b *Backend) ResetPeak() {
	b.mem.Lock()
	b.peak = b.current
	b.mem.Unlock()
}

// Alloc implements bench.Backend: zero-filled device memory.
func (b *Backend) Alloc(shape bench.Shape, dt bench.DType) (bench.Tensor, error) {
	if err := b.ready(); err != nil {
		return nil, err
	}
	if dt != bench.Float32 {
		return nil, fmt.Errorf("%s: cannot allocate %s tensors (float32 only)", b.name, dt)
	}
	n := shape.Elems()
	if n < 0 || n > 1<<40 {
		return nil, fmt.Errorf("%s: shape %v is too large", b.name, shape)
	}
	t := &tensor{b: b, shape: append(bench.Shape(nil), shape...), dtype: dt, bytes: n * 4}
	if t.bytes == 0 {
		return t, nil
	}
	err := b.run(func() error {
		d := b.drv
		if err := d.check("cuMemAlloc_v2", d.cuMemAlloc(&t.ptr, uint64(t.bytes))); err != nil {
			return err
		}
		return d.check("cuMemsetD8Async", d.cuMemsetD8Async(t.ptr, 0, uint64(t.bytes), b.stream))
	})
	if err != nil {
		return nil, fmt.Errorf("%s: allocating %v (%d bytes): %w", b.name, shape, t.bytes, err)
	}
	b.account(t.bytes)
	return t, nil
}

// Free implements bench.Backend. It waits for the stream first, since
// queued kernels may still use the memory.
func (b *Backend) Free(t bench.Tensor) {
	ct, ok := t.(*tensor)
	if !ok || ct == nil || ct.freed || ct.b != b {
		return
	}
	ct.freed = true
	if ct.ptr == 0 || b.closed || b.w == nil {
		return
	}
	b.run(func() error {
		b.syncStream()
		return b.drv.check("cuMemFree_v2", b.drv.cuMemFree(ct.ptr))
	})
	ct.ptr = 0
	b.account(-ct.bytes)
}

// device returns t as this backend's live tensor.
func (b *Backend) device(t bench.Tensor) (*tensor, error) {
	ct, ok := t.(*tensor)
	if !ok || ct == nil || ct.b != b {
		return nil, fmt.Errorf("%s: tensor %T was not allocated by this backend", b.name, t)
	}
	if ct.freed {
		return nil, fmt.Errorf("%s: use of a freed tensor of shape %v", b.name, ct.shape)
	}
	return ct, nil
}

// Upload implements bench.Backend: a synchronous copy after the stream's
// queued work, so that no queued kernel reads the new data early.
func (b *Backend) Upload(t bench.Tensor, src []float32) error {
	if err := b.ready(); err != nil {
		return err
	}
	ct, err := b.device(t)
	if err != nil {
		return err
	}
	if int64(len(src)) != ct.elems() {
		return fmt.Errorf("%s: upload of %d values into a tensor of shape %v", b.name, len(src), ct.shape)
	}
	if len(src) == 0 {
		return nil
	}
	return b.run(func() error {
		if err := b.syncStream(); err != nil {
			return err
		}
		var pin runtime.Pinner
		pin.Pin(&src[0])
		defer pin.Unpin()
		if err := b.drv.check("cuMemcpyHtoD_v2", b.drv.cuMemcpyHtoD(ct.ptr, unsafe.Pointer(&src[0]), uint64(ct.bytes))); err != nil {
			return err
		}
		// From pageable memory the copy may return before its DMA ends, on
		// the legacy stream, which the backend's non-blocking stream does
		// not wait for: wait for the whole context.
		return b.drv.check("cuCtxSynchronize", b.drv.cuCtxSynchronize())
	})
}

// Download implements bench.Backend: it waits for the stream, then copies.
func (b *Backend) Download(t bench.Tensor, dst []float32) error {
	if err := b.ready(); err != nil {
		return err
	}
	ct, err := b.device(t)
	if err != nil {
		return err
	}
	if int64(len(dst)) != ct.elems() {
		return fmt.Errorf("%s: download of a tensor of shape %v into %d values", b.name, ct.shape, len(dst))
	}
	if len(dst) == 0 {
		return nil
	}
	return b.run(func() error {
		if err := b.syncStream(); err != nil {
			return err
		}
		var pin runtime.Pinner
		pin.Pin(&dst[0])
		defer pin.Unpin()
		return b.drv.check("cuMemcpyDtoH_v2", b.drv.cuMemcpyDtoH(unsafe.Pointer(&dst[0]), ct.ptr, uint64(ct.bytes)))
	})
}

// scratchAlign keeps every scratch part 256-byte aligned (float4 loads,
// cuBLAS's preferred alignment).
const scratchAlign = 256

// scratchParts returns device buffers of the given byte sizes carved from
// the backend's scratch space (grown when too small, never shrunk), and a
// release function. Runs on the device thread. The bytes count toward
// Memory until release. Kernels queued later on the stream may reuse the
// space: the stream orders them after the current node's kernels.
func (b *Backend) scratchParts(sizes ...int64) ([]devicePtr, func(), error) {
	var total int64
	offs := make([]int64, len(sizes))
	for i, s := range sizes {
		offs[i] = total
		total += (s + scratchAlign - 1) / scratchAlign * scratchAlign
	}
	if b.dry != nil {
		out := make([]devicePtr, len(sizes))
		for i := range sizes {
			out[i] = b.dry.next + devicePtr(offs[i])
		}
		b.dry.next += devicePtr(total)
		return out, func() {}, nil
	}
	if total > b.scrCap {
		d := b.drv
		if b.scratch != 0 {
			// Queued kernels may still read the old space.
			if err := b.syncStream(); err != nil {
				return nil, nil, err
			}
			d.cuMemFree(b.scratch)
			b.scratch, b.scrCap = 0, 0
		}
		if err := d.check("cuMemAlloc_v2", d.cuMemAlloc(&b.scratch, uint64(total))); err != nil {
			return nil, nil, fmt.Errorf("scratch of %d bytes: %w", total, err)
		}
		b.scrCap = total
	}
	out := make([]devicePtr, len(sizes))
	for i := range sizes {
		out[i] = b.scratch + devicePtr(offs[i])
	}
	b.account(total)
	return out, func() { b.account(-total) }, nil
}
