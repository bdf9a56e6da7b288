package cuda

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"vitbench/bench"
)

func init() {
	for _, m := range []Math{FP32, TF32, BF16, FP16} {
		bench.RegisterBackend(m.BackendName(), func(int) (bench.Backend, error) { return Open(0, m), nil })
	}
}

// Backend is the CUDA backend on one device: a context on a locked OS
// thread, one stream, NVRTC-compiled kernels and cuBLAS for the products.
// Its Math says how cuBLAS computes the products: backend "cuda" in strict
// fp32, "cuda-tf32", "cuda-bf16" and "cuda-fp16" on tensor cores with
// reduced-precision products (the same graphs, labelled apart).
type Backend struct {
	name string
	math Math
	info bench.Info

	libs libSet
	w    *worker
	drv  *driver
	rtc  *nvrtc
	blas *cublas
	// blasErr is why GEMM-based ops are unsupported (cuBLAS missing or
	// failing to start); the other ops still run.
	blasErr error

	dev              int32
	arch             int
	tgt              target
	ctx, stream      cuHandle
	evStart, evStop  cuHandle
	blasHandle       uintptr
	cacheDir         string
	l2Bytes          int64
	flush            devicePtr
	flushBytes       int64
	modules          map[string]cuHandle
	funcs            map[string]cuHandle
	compiledFromDisk int
	compiledNow      int

	// dry, when set (tests), records launches and products instead of
	// queueing them; see dryRun.
	dry *dryRun

	// faults holds the sticky fault that ended the context, if one did.
	faults faultState

	mem     sync.Mutex
	current int64
	peak    int64
	scratch devicePtr
	scrCap  int64
	closed  bool
}

// Open starts the backend on device ordinal with products computed as m
// says. It always returns a Backend; when the driver, a device or NVRTC is
// missing, Info().Available is false and Info().Reason says why in one line.
func Open(ordinal int, m Math) *Backend { return openLibs(ordinal, m, m.BackendName(), systemLibs) }

// libSet says where a backend's driver, NVRTC and cuBLAS come from: the
// machine's CUDA libraries (systemLibs) or the CUDA emulator (emu.go).
type libSet struct {
	driver func() (*driver, error)
	nvrtc  func() (*nvrtc, error)
	cublas func() (*cublas, error)
}

// systemLibs are the machine's libcuda, NVRTC and cuBLAS (libs.go).
var systemLibs = libSet{driver: loadDriver, nvrtc: loadNVRTC, cublas: loadCuBLAS}

// openWith is Open with the driver's loader as a parameter: tests pass one
// returning a simulated driver to exercise the device's failure modes.
func openWith(ordinal int, m Math, load func() (*driver, error)) *Backend {
	libs := systemLibs
	libs.driver = load
	return openLibs(ordinal, m, m.BackendName(), libs)
}

// openLibs opens backend name on device ordinal with the libraries libs.
func openLibs(ordinal int, m Math, name string, libs libSet) *Backend {
	b := &Backend{name: name, math: m, libs: libs, modules: map[string]cuHandle{}, funcs: map[string]cuHandle{}}
	b.info = bench.Info{Name: b.name}
	if err := b.start(ordinal); err != nil {
		b.info.Reason = oneLine(err.Error())
		if b.w != nil {
			b.run(b.release)
			b.w.stop()
			b.w = nil
		}
	}
	return b
}

// start loads the driver and the other libraries of b.libs, creates the
// context, stream, events and cuBLAS handle on a new device thread, and
// fills Info.
func (b *Backend) start(ordinal int) error {
	d, err := b.libs.driver()
	if err != nil {
		return err
	}
	b.drv = d
	w, err := startWorker(func() error { return b.openDevice(ordinal) })
	if err != nil {
		return err
	}
	b.w = w
	rtc, err := b.libs.nvrtc()
	if err != nil {
		return fmt.Errorf("%v (the driver and %s are present, but kernels cannot be compiled)", err, b.info.Device)
	}
	b.rtc = rtc
	if b.tgt, err = rtc.targetFor(b.arch); err != nil {
		return err
	}
	b.cacheDir = cacheDir()
	if err := w.run(b.openCuBLAS); err != nil {
		b.blasErr = err
	}
	if err := w.run(b.allocFlush); err != nil {
		return err
	}
	if err := w.run(b.probe); err != nil {
		return err
	}
	b.fillInfo()
	b.info.Available = true
	return nil
}

// openDevice runs on the device thread: cuInit, the device's properties,
// its primary context made current, a stream and two timing events.
func (b *Backend) openDevice(ordinal int) error {
	d := b.drv
	if err := d.check("cuInit", d.cuInit(0)); err != nil {
		return err
	}
	var n int32
	if err := d.check("cuDeviceGetCount", d.cuDeviceGetCount(&n)); err != nil {
		return err
	}
	if int(n) <= ordinal {
		return fmt.Errorf("no CUDA device %d (the driver sees %d)", ordinal, n)
	}
	if err := d.check("cuDeviceGet", d.cuDeviceGet(&b.dev, int32(ordinal))); err != nil {
		return err
	}
	name := make([]byte, 256)
	if err := d.check("cuDeviceGetName", d.cuDeviceGetName(&name[0], int32(len(name)), b.dev)); err != nil {
		return err
	}
	b.info.Device = cString(&name[0])
	major, minor := b.attr(attrComputeMajor), b.attr(attrComputeMinor)
	b.arch = major*10 + minor
	b.l2Bytes = int64(b.attr(attrL2CacheSize))
	var ver int32
	d.cuDriverGetVersion(&ver)
	var total uint64
	d.cuDeviceTotalMem(&total, b.dev)
	b.info.Details = map[string]string{
		"driver_cuda":        fmt.Sprintf("%d.%d", ver/1000, ver%1000/10),
		"devices":            strconv.Itoa(int(n)),
		"compute_capability": fmt.Sprintf("%d.%d", major, minor),
		"sms":                strconv.Itoa(b.attr(attrMultiprocessorCount)),
		"memory_gib":         fmt.Sprintf("%.1f", float64(total)/(1<<30)),
		"l2_mib":             fmt.Sprintf("%.1f", float64(b.l2Bytes)/(1<<20)),
	}
	if v := nvidiaDriverVersion(); v != "" {
		b.info.Details["driver"] = v
	}
	if err := d.check("cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRet(&b.ctx, b.dev)); err != nil {
		return err
	}
	if err := d.check("cuCtxSetCurrent", d.cuCtxSetCurrent(b.ctx)); err != nil {
		return err
	}
	// A non-blocking stream: no implicit synchronization with the legacy
	// default stream; this package orders everything on this stream itself.
	if err := d.check("cuStreamCreate", d.cuStreamCreate(&b.stream, 1)); err != nil {
		return err
	}
	if err := d.check("cuEventCreate", d.cuEventCreate(&b.evStart, 0)); err != nil {
		return err
	}
	return d.check("cuEventCreate", d.cuEventCreate(&b.evStop, 0))
}

func (b *Backend) attr(a int32) int {
	var v int32
	if b.drv.cuDeviceGetAttribute(&v, a, b.dev) != 0 {
		return 0
	}
	return int(v)
}

// openCuBLAS runs on the device thread: a cuBLAS handle on the stream in
// the backend's math mode.
func (b *Backend) openCuBLAS() error {
	c, err := b.libs.cublas()
	if err != nil {
		return err
	}
	var h uintptr
	if err := c.check("cublasCreate_v2", c.cublasCreate(&h)); err != nil {
		return err
	}
	mode := int32(cublasDefaultMath)
	if b.math == TF32 {
		mode = cublasTF32TensorMath
	}
	if err := c.check("cublasSetStream_v2", c.cublasSetStream(h, b.stream)); err != nil {
		c.cublasDestroy(h)
		return err
	}
	if err := c.check("cublasSetMathMode", c.cublasSetMathMode(h, mode)); err != nil {
		c.cublasDestroy(h)
		return err
	}
	b.blas, b.blasHandle = c, h
	return nil
}

// allocFlush allocates the buffer Time clears before each timed run to
// evict the L2 cache: twice the L2 size, at least 64 MiB.
func (b *Backend) allocFlush() error {
	b.flushBytes = max(2*b.l2Bytes, 64<<20)
	return b.drv.check("cuMemAlloc_v2", b.drv.cuMemAlloc(&b.flush, uint64(b.flushBytes)))
}

// fillInfo adds the libraries' versions and the kernel target to Details.
func (b *Backend) fillInfo() {
	det := b.info.Details
	det["nvrtc"] = b.rtc.version()
	det["kernels"] = b.tgt.String()
	if !b.tgt.CUBIN {
		det["kernels"] += " (PTX, compiled by the driver at load)"
	}
	det["math"] = b.math.Describe()
	if b.blasErr != nil {
		det["cublas"] = "unavailable: " + oneLine(b.blasErr.Error())
	} else {
		var v int32
		b.run(func() error { return b.blas.check("cublasGetVersion_v2", b.blas.cublasGetVersion(b.blasHandle, &v)) })
		det["cublas"] = formatCuBLASVersion(v)
	}
	det["l2_flush_mib"] = strconv.FormatInt(b.flushBytes>>20, 10)
	if b.cacheDir == "" {
		det["kernel_cache"] = "off"
	} else {
		det["kernel_cache"] = b.cacheDir
	}
}

// nvidiaDriverVersion reads the kernel module's version ("550.54.14") from
// /proc/driver/nvidia/version, or returns "".
func nvidiaDriverVersion() string {
	raw, err := os.ReadFile("/proc/driver/nvidia/version")
	if err != nil {
		return ""
	}
	f := strings.Fields(strings.SplitN(string(raw), "\n", 2)[0])
	for i, w := range f {
		if w == "Module" && i+1 < len(f) {
			return f[i+1]
		}
	}
	return ""
}

// Name implements bench.Backend.
func (b *Backend) Name() string { return b.name }

// Info implements bench.Backend.
func (b *Backend) Info() bench.Info { return b.info }

// unavailable is the error of every call on a backend without a device.
func (b *Backend) unavailable() error {
	if b.closed {
		return errors.New(b.name + ": closed")
	}
	return errors.New(b.name + ": " + b.info.Reason)
}

// ready returns nil when calls can go to the device.
func (b *Backend) ready() error {
	if !b.info.Available || b.closed {
		return b.unavailable()
	}
	return b.lost()
}

// Sync implements bench.Backend: it waits for the stream and returns the
// first asynchronous error (a fault in a kernel) if there was one.
func (b *Backend) Sync() error {
	if err := b.ready(); err != nil {
		return err
	}
	return b.run(b.syncStream)
}

func (b *Backend) syncStream() error {
	return b.drv.check("cuStreamSynchronize", b.drv.cuStreamSynchronize(b.stream))
}

// Close implements bench.Backend: it frees the device memory it still
// holds, unloads the modules and ends the device thread.
func (b *Backend) Close() error {
	if b.w == nil || b.closed {
		return nil
	}
	err := b.run(b.release)
	b.w.stop()
	b.closed = true
	return err
}

// release runs on the device thread and frees everything start made.
func (b *Backend) release() error {
	d := b.drv
	if b.stream != 0 {
		d.cuStreamSynchronize(b.stream)
	}
	if b.blasHandle != 0 {
		b.blas.cublasDestroy(b.blasHandle)
		b.blasHandle = 0
	}
	for _, m := range b.modules {
		d.cuModuleUnload(m)
	}
	b.modules, b.funcs = map[string]cuHandle{}, map[string]cuHandle{}
	for _, p := range []*devicePtr{&b.flush, &b.scratch} {
		if *p != 0 {
			d.cuMemFree(*p)
			*p = 0
		}
	}
	for _, e := range []*cuHandle{&b.evStart, &b.evStop} {
		if *e != 0 {
			d.cuEventDestroy(*e)
			*e = 0
		}
	}
	if b.stream != 0 {
		d.cuStreamDestroy(b.stream)
		b.stream = 0
	}
	if b.ctx != 0 {
		b.ctx = 0
		return d.check("cuDevicePrimaryCtxRelease", d.cuDevicePrimaryCtxRel(b.dev))
	}
	return nil
}
