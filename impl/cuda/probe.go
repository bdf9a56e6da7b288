package cuda

import (
	"fmt"
	"runtime"
	"unsafe"
)

// The probe's shape: probeBlocks blocks of probeThreads threads over
// probeN values (the last block partly outside).
const (
	probeThreads = 64
	probeBlocks  = 3
	probeN       = probeThreads*probeBlocks - 17
)

// probeWant is what probe_f32 writes at i (kernels/probe.cu).
func probeWant(i int) float32 { return float32(probeThreads*(probeThreads-1)/2 + i) }

// probe runs on the device thread: it compiles kernels/probe.cu, launches
// it and checks every value it wrote, so that a backend whose NVRTC cannot
// compile (its builtins missing), whose driver cannot load the code or
// launch it, is unavailable with that reason instead of failing every case.
func (b *Backend) probe() error {
	d := b.drv
	var out devicePtr
	if err := d.check("cuMemAlloc_v2", d.cuMemAlloc(&out, probeN*4)); err != nil {
		return fmt.Errorf("probe kernel: %w", err)
	}
	defer d.cuMemFree(out)
	if err := b.launch("probe.cu", "probe_f32", dim3{probeBlocks, 1, 1}, dim3{probeThreads, 1, 1}, 0, uint64(out), int32(probeN)); err != nil {
		return fmt.Errorf("probe kernel: %w", err)
	}
	if err := b.syncStream(); err != nil {
		return fmt.Errorf("probe kernel: %w", err)
	}
	got := make([]float32, probeN)
	var pin runtime.Pinner
	pin.Pin(&got[0])
	err := d.check("cuMemcpyDtoH_v2", d.cuMemcpyDtoH(unsafe.Pointer(&got[0]), out, probeN*4))
	pin.Unpin()
	if err != nil {
		return fmt.Errorf("probe kernel: %w", err)
	}
	for i, v := range got {
		if v != probeWant(i) {
			return fmt.Errorf("probe kernel: out[%d] = %v, want %v: the device does not compute what the kernel says", i, v, probeWant(i))
		}
	}
	return nil
}
