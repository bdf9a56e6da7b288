package cuda

import (
	"sort"
	"sync"
	"testing"
	"unsafe"
)

// CUresult codes the fake device returns.
const (
	cudaErrorInvalidValue   cuResult = 1
	cudaErrorOutOfMemory    cuResult = 2
	cudaErrorInvalidHandle  cuResult = 400
	cudaErrorIllegalAddress cuResult = 700
	cudaErrorOutOfResources cuResult = 701
	cudaErrorLaunchFailed   cuResult = 719
)

// fakeErrorText holds cuGetErrorName's and cuGetErrorString's answers as
// NUL-terminated byte strings that live as long as the package, as the
// driver's static strings do.
var fakeErrorText = map[cuResult][2][]byte{}

func init() {
	for code, s := range map[cuResult][2]string{
		0:                       {"CUDA_SUCCESS", "no error"},
		cudaErrorInvalidValue:   {"CUDA_ERROR_INVALID_VALUE", "invalid argument"},
		cudaErrorOutOfMemory:    {"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
		cudaErrorInvalidHandle:  {"CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
		cudaErrorIllegalAddress: {"CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
		cudaErrorLaunchFailed:   {"CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
		cudaErrorOutOfResources: {"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
	} {
		fakeErrorText[code] = [2][]byte{append([]byte(s[0]), 0), append([]byte(s[1]), 0)}
	}
}

// fakeAlloc is one device allocation of the fake: its address range and
// the host bytes behind it, made at the first write (a buffer never
// written reads as zeros, so the 64 MiB L2-flush buffer costs nothing).
type fakeAlloc struct {
	base, size uint64
	data       []byte
}

// fakeDevice simulates one CUDA device of compute capability 8.0 on host
// memory, behind a *driver whose entry points are its methods. Every call
// of the backend's happens on its device thread; the mutex lets a test read
// the state from its own goroutine.
type fakeDevice struct {
	mu sync.Mutex

	// total is the device memory: an allocation that would take the bytes
	// in use above it fails with CUDA_ERROR_OUT_OF_MEMORY.
	total uint64
	// failKernel names the kernel whose launches fail with
	// CUDA_ERROR_LAUNCH_FAILED ("" = none). With failAsync the launch
	// itself succeeds and the fault is returned by the next synchronising
	// call (cuStreamSynchronize, cuEventSynchronize, cuCtxSynchronize), as
	// a kernel that faults while running is.
	failKernel string
	failAsync  bool
	// probeWrong makes the probe kernel write a wrong last value.
	probeWrong bool
	// failCode is the error of failKernel's launches (0:
	// CUDA_ERROR_LAUNCH_FAILED, which ends the context for good).
	failCode cuResult

	allocs   map[uint64]*fakeAlloc // by base address
	next     uint64                // the next address handed out
	inUse    uint64
	launched []string // kernel names, in launch order
	funcs    map[cuHandle]string
	handles  cuHandle
	live     map[cuHandle]string // streams, events, modules and the context
	pending  cuResult            // an asynchronous fault not yet reported
}

// newFakeDevice returns a fake device with 16 GiB of memory and no faults.
func newFakeDevice() *fakeDevice {
	return &fakeDevice{total: 16 << 30, allocs: map[uint64]*fakeAlloc{}, next: 1 << 36,
		funcs: map[cuHandle]string{}, live: map[cuHandle]string{}}
}

// fakeAttrs are the device attributes: an A100-like part with a smaller L2.
var fakeAttrs = map[int32]int32{
	attrMaxThreadsPerBlock:  1024,
	attrMaxSharedPerBlock:   48 << 10,
	attrMultiprocessorCount: 108,
	attrComputeMajor:        8,
	attrComputeMinor:        0,
	attrL2CacheSize:         24 << 20,
	attrMaxSharedOptin:      163 << 10,
}

// driver returns the driver API bound to the fake.
func (f *fakeDevice) driver() *driver {
	lock := func() func() { f.mu.Lock(); return f.mu.Unlock }
	handle := func(kind string) cuHandle {
		f.handles++
		f.live[f.handles] = kind
		return f.handles
	}
	release := func(h cuHandle, kind string) cuResult {
		if f.live[h] != kind {
			return cudaErrorInvalidHandle
		}
		delete(f.live, h)
		return 0
	}
	synchronize := func() cuResult {
		defer lock()()
		code := f.pending
		f.pending = 0
		return code
	}
	return &driver{
		path:               "fake libcuda",
		cuInit:             func(uint32) cuResult { return 0 },
		cuDriverGetVersion: func(v *int32) cuResult { *v = 12040; return 0 },
		cuDeviceGetCount:   func(n *int32) cuResult { *n = 1; return 0 },
		cuDeviceGet: func(dev *int32, ordinal int32) cuResult {
			if ordinal != 0 {
				return cudaErrorInvalidValue
			}
			*dev = 0
			return 0
		},
		cuDeviceGetName: func(name *byte, length int32, dev int32) cuResult {
			buf := unsafe.Slice(name, length)
			buf[copy(buf[:length-1], "fake GPU")] = 0
			return 0
		},
		cuDeviceGetAttribute: func(v *int32, attr int32, dev int32) cuResult {
			a, ok := fakeAttrs[attr]
			if !ok {
				return cudaErrorInvalidValue
			}
			*v = a
			return 0
		},
		cuDeviceTotalMem: func(bytes *uint64, dev int32) cuResult {
			defer lock()()
			*bytes = f.total
			return 0
		},
		cuDevicePrimaryCtxRet: func(ctx *cuHandle, dev int32) cuResult {
			defer lock()()
			*ctx = handle("context")
			return 0
		},
		cuDevicePrimaryCtxRel: func(dev int32) cuResult {
			defer lock()()
			for h, kind := range f.live {
				if kind == "context" {
					delete(f.live, h)
					return 0
				}
			}
			return cudaErrorInvalidValue
		},
		cuCtxSetCurrent:  func(cuHandle) cuResult { return 0 },
		cuCtxSynchronize: synchronize,
		cuMemAlloc: func(p *devicePtr, bytes uint64) cuResult {
			defer lock()()
			if bytes == 0 {
				return cudaErrorInvalidValue
			}
			if f.inUse+bytes > f.total {
				return cudaErrorOutOfMemory
			}
			a := &fakeAlloc{base: f.next, size: bytes}
			f.allocs[a.base] = a
			// 256-byte aligned, with an unmapped page after every
			// allocation so that an overrun is an illegal address.
			f.next += (bytes+255)/256*256 + 4096
			f.inUse += bytes
			*p = a.base
			return 0
		},
		cuMemFree: func(p devicePtr) cuResult {
			defer lock()()
			a, ok := f.allocs[p]
			if !ok {
				return cudaErrorInvalidValue
			}
			delete(f.allocs, p)
			f.inUse -= a.size
			return 0
		},
		cuMemGetInfo: func(free, total *uint64) cuResult {
			defer lock()()
			*free, *total = f.total-f.inUse, f.total
			return 0
		},
		cuMemcpyHtoD: func(dst devicePtr, src unsafe.Pointer, bytes uint64) cuResult {
			defer lock()()
			d, code := f.span(dst, bytes, true)
			if code == 0 {
				copy(d, unsafe.Slice((*byte)(src), bytes))
			}
			return code
		},
		cuMemcpyDtoH: func(dst unsafe.Pointer, src devicePtr, bytes uint64) cuResult {
			defer lock()()
			s, code := f.span(src, bytes, false)
			if code == 0 {
				out := unsafe.Slice((*byte)(dst), bytes)
				if s == nil {
					clear(out)
				} else {
					copy(out, s)
				}
			}
			return code
		},
		cuMemcpyDtoDAsync: func(dst, src devicePtr, bytes uint64, stream cuHandle) cuResult {
			defer lock()()
			s, code := f.span(src, bytes, false)
			if code != 0 {
				return code
			}
			d, code := f.span(dst, bytes, true)
			if code == 0 {
				if s == nil {
					clear(d)
				} else {
					copy(d, s)
				}
			}
			return code
		},
		cuMemsetD8Async: func(dst devicePtr, v uint8, n uint64, stream cuHandle) cuResult {
			defer lock()()
			d, code := f.span(dst, n, v != 0)
			for i := range d {
				d[i] = v
			}
			return code
		},
		cuMemsetD32Async: func(dst devicePtr, v uint32, n uint64, stream cuHandle) cuResult {
			defer lock()()
			d, code := f.span(dst, 4*n, v != 0)
			for i := 0; i+4 <= len(d); i += 4 {
				*(*uint32)(unsafe.Pointer(&d[i])) = v
			}
			return code
		},
		cuModuleLoadData: func(mod *cuHandle, image unsafe.Pointer) cuResult {
			defer lock()()
			*mod = handle("module")
			return 0
		},
		cuModuleGetFunction: func(fn *cuHandle, mod cuHandle, name string) cuResult {
			defer lock()()
			if f.live[mod] != "module" {
				return cudaErrorInvalidHandle
			}
			f.handles++
			f.funcs[f.handles] = name
			*fn = f.handles
			return 0
		},
		cuModuleUnload:     func(mod cuHandle) cuResult { defer lock()(); return release(mod, "module") },
		cuFuncSetAttribute: func(cuHandle, int32, int32) cuResult { return 0 },
		cuLaunchKernel: func(fn cuHandle, gx, gy, gz, bx, by, bz, shared uint32, stream cuHandle, params, extra unsafe.Pointer) cuResult {
			defer lock()()
			name, ok := f.funcs[fn]
			if !ok || f.live[stream] != "stream" {
				return cudaErrorInvalidHandle
			}
			if name == "probe_f32" {
				return f.runProbe(params)
			}
			f.launched = append(f.launched, name)
			if name == f.failKernel {
				code := f.failCode
				if code == 0 {
					code = cudaErrorLaunchFailed
				}
				if f.failAsync {
					f.pending = code
					return 0
				}
				return code
			}
			return 0
		},
		cuStreamCreate: func(s *cuHandle, flags uint32) cuResult {
			defer lock()()
			*s = handle("stream")
			return 0
		},
		cuStreamSynchronize: func(cuHandle) cuResult { return synchronize() },
		cuStreamDestroy:     func(s cuHandle) cuResult { defer lock()(); return release(s, "stream") },
		cuEventCreate: func(ev *cuHandle, flags uint32) cuResult {
			defer lock()()
			*ev = handle("event")
			return 0
		},
		cuEventRecord:      func(ev, stream cuHandle) cuResult { return 0 },
		cuEventSynchronize: func(cuHandle) cuResult { return synchronize() },
		cuEventElapsedTime: func(ms *float32, start, end cuHandle) cuResult { *ms = 0.1; return 0 },
		cuEventDestroy:     func(ev cuHandle) cuResult { defer lock()(); return release(ev, "event") },
		cuGetErrorName:     fakeErrorString(0),
		cuGetErrorString:   fakeErrorString(1),
	}
}

// fakeErrorString returns cuGetErrorName (which = 0) or cuGetErrorString
// (which = 1) over fakeErrorText; an unknown code is
// CUDA_ERROR_INVALID_VALUE with no string, as in the driver.
func fakeErrorString(which int) func(code cuResult, str **byte) cuResult {
	return func(code cuResult, str **byte) cuResult {
		s, ok := fakeErrorText[code]
		if !ok {
			*str = nil
			return cudaErrorInvalidValue
		}
		*str = &s[which][0]
		return 0
	}
}

// span returns the host bytes behind [p, p+n), which must lie inside one
// allocation, or CUDA_ERROR_ILLEGAL_ADDRESS. When write is false and the
// allocation was never written, it returns nil (all zeros). Called with
// f.mu held.
func (f *fakeDevice) span(p devicePtr, n uint64, write bool) ([]byte, cuResult) {
	for _, a := range f.allocs {
		if p >= a.base && p+n <= a.base+a.size {
			if a.data == nil {
				if !write {
					return nil, 0
				}
				a.data = make([]byte, a.size)
			}
			return a.data[p-a.base : p-a.base+n], 0
		}
	}
	return nil, cudaErrorIllegalAddress
}

// allocations returns the sizes of the live allocations, ascending.
func (f *fakeDevice) allocations() []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []uint64
	for _, a := range f.allocs {
		out = append(out, a.size)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// used returns the bytes allocated on the fake device.
func (f *fakeDevice) used() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inUse
}

// launches returns the names of the kernels launched so far.
func (f *fakeDevice) launches() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.launched...)
}

// liveHandles returns the kinds of the contexts, streams, events and
// modules not yet released.
func (f *fakeDevice) liveHandles() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, kind := range f.live {
		out = append(out, kind)
	}
	sort.Strings(out)
	return out
}

// set changes the fake's configuration under its lock.
func (f *fakeDevice) set(change func(f *fakeDevice)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

// openFake opens a "cuda" backend on a new fake device, with NVRTC (real:
// the kernels are compiled) and no kernel cache; cuBLAS is whatever this
// machine has, so tests use ops that need none. The backend is closed when
// the test ends, and must then have released everything it made.
func openFake(t *testing.T) (*Backend, *fakeDevice) {
	t.Helper()
	requireNVRTC(t)
	t.Setenv(cacheEnv, "off")
	f := newFakeDevice()
	b := openWith(0, FP32, func() (*driver, error) { return f.driver(), nil })
	if !b.Info().Available {
		t.Fatalf("backend on the fake device unavailable: %s", b.Info().Reason)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if a, h := f.allocations(), f.liveHandles(); len(a) != 0 || len(h) != 0 {
			t.Errorf("after Close the fake device still holds allocations %v and handles %v", a, h)
		}
	})
	return b, f
}

// runProbe computes what kernels/probe.cu computes into its output, so the
// backend's probe at Open passes on the fake device (unless failKernel
// names the probe). Called with f.mu held.
func (f *fakeDevice) runProbe(params unsafe.Pointer) cuResult {
	if f.failKernel == "probe_f32" {
		return cudaErrorLaunchFailed
	}
	args := unsafe.Slice((*unsafe.Pointer)(params), 2)
	out, n := *(*devicePtr)(args[0]), int(*(*int32)(args[1]))
	d, code := f.span(out, uint64(n)*4, true)
	if code != 0 {
		return code
	}
	for i := 0; i < n; i++ {
		v := probeWant(i)
		if i == n-1 && f.probeWrong {
			v++
		}
		*(*float32)(unsafe.Pointer(&d[4*i])) = v
	}
	return 0
}
