package cuda

import (
	"errors"
	"fmt"
	"strconv"

	"vitbench/bench"
)

func init() { bench.RegisterBackend("cuda", func(int) (bench.Backend, error) { return Open(0), nil }) }

// errNoKernels is the NS reason for every op until the kernels land.
var errNoKernels = errors.New("cuda: no kernels yet (the CUDA backend issue adds them)")

// Backend is the CUDA backend on one device.
type Backend struct {
	info bench.Info
}

// Open probes the driver and device ordinal; the result is always usable
// as a Backend, and Info says whether the device is.
func Open(ordinal int) *Backend {
	b := &Backend{info: bench.Info{Name: "cuda"}}
	d, err := loadDriver()
	if err != nil {
		b.info.Reason = err.Error()
		return b
	}
	if err := d.check("cuInit", d.cuInit(0)); err != nil {
		b.info.Reason = err.Error()
		return b
	}
	var n, ver int32
	if err := d.check("cuDeviceGetCount", d.cuDeviceGetCount(&n)); err != nil {
		b.info.Reason = err.Error()
		return b
	}
	if int(n) <= ordinal {
		b.info.Reason = fmt.Sprintf("no CUDA device %d (the driver sees %d)", ordinal, n)
		return b
	}
	var dev int32
	if err := d.check("cuDeviceGet", d.cuDeviceGet(&dev, int32(ordinal))); err != nil {
		b.info.Reason = err.Error()
		return b
	}
	name := make([]byte, 256)
	if err := d.check("cuDeviceGetName", d.cuDeviceGetName(&name[0], int32(len(name)), dev)); err != nil {
		b.info.Reason = err.Error()
		return b
	}
	d.cuDriverGetVersion(&ver)
	b.info.Available = true
	b.info.Device = cString(&name[0])
	b.info.Details = map[string]string{
		"driver_cuda_version": fmt.Sprintf("%d.%d", ver/1000, ver%1000/10),
		"devices":             strconv.Itoa(int(n)),
		"kernels":             "none yet",
	}
	return b
}

// Name implements bench.Backend.
func (b *Backend) Name() string { return "cuda" }

// Info implements bench.Backend.
func (b *Backend) Info() bench.Info { return b.info }

// Supports implements bench.Backend.
func (b *Backend) Supports(op string, dt bench.DType) error {
	if !b.info.Available {
		return errors.New(b.info.Reason)
	}
	return errNoKernels
}

func (b *Backend) unavailable() error {
	if !b.info.Available {
		return errors.New("cuda: " + b.info.Reason)
	}
	return errNoKernels
}

// Alloc implements bench.Backend.
func (b *Backend) Alloc(bench.Shape, bench.DType) (bench.Tensor, error) { return nil, b.unavailable() }

// Free implements bench.Backend.
func (b *Backend) Free(bench.Tensor) {}

// Upload implements bench.Backend.
func (b *Backend) Upload(bench.Tensor, []float32) error { return b.unavailable() }

// Download implements bench.Backend.
func (b *Backend) Download(bench.Tensor, []float32) error { return b.unavailable() }

// Enqueue implements bench.Backend.
func (b *Backend) Enqueue(bench.Node, []bench.Tensor, []bench.Tensor) error { return b.unavailable() }

// Sync implements bench.Backend.
func (b *Backend) Sync() error { return nil }

// Time implements bench.Backend.
func (b *Backend) Time(func() error) (bench.Timing, error) {
	return bench.Timing{}, b.unavailable()
}

// Memory implements bench.Backend.
func (b *Backend) Memory() bench.MemStats { return bench.MemStats{} }

// ResetPeak implements bench.Backend.
func (b *Backend) ResetPeak() {}

// Close implements bench.Backend.
func (b *Backend) Close() error { return nil }
