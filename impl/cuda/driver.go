package cuda

import (
	"fmt"
	"sync"
	"unsafe"
)

// The CUDA driver API types, as this package passes them through purego.
type (
	cuResult  = int32
	devicePtr = uint64  // CUdeviceptr
	cuHandle  = uintptr // CUcontext, CUmodule, CUfunction, CUstream, CUevent
)

// Device attributes read by Open (CUdevice_attribute).
const (
	attrMaxThreadsPerBlock  = 1
	attrMaxSharedPerBlock   = 8
	attrMultiprocessorCount = 16
	attrComputeMajor        = 75
	attrComputeMinor        = 76
	attrL2CacheSize         = 38
	attrMaxSharedOptin      = 97
)

// driver holds the entry points of libcuda this package uses; the
// versioned (_v2) symbols are the current ABIs.
type driver struct {
	path string

	cuInit                func(flags uint32) cuResult
	cuDriverGetVersion    func(version *int32) cuResult
	cuDeviceGetCount      func(count *int32) cuResult
	cuDeviceGet           func(dev *int32, ordinal int32) cuResult
	cuDeviceGetName       func(name *byte, length int32, dev int32) cuResult
	cuDeviceGetAttribute  func(v *int32, attr int32, dev int32) cuResult
	cuDeviceTotalMem      func(bytes *uint64, dev int32) cuResult
	cuDevicePrimaryCtxRet func(ctx *cuHandle, dev int32) cuResult
	cuDevicePrimaryCtxRel func(dev int32) cuResult
	cuCtxSetCurrent       func(ctx cuHandle) cuResult
	cuCtxSynchronize      func() cuResult
	cuMemAlloc            func(p *devicePtr, bytes uint64) cuResult
	cuMemFree             func(p devicePtr) cuResult
	cuMemGetInfo          func(free, total *uint64) cuResult
	cuMemcpyHtoD          func(dst devicePtr, src unsafe.Pointer, bytes uint64) cuResult
	cuMemcpyDtoH          func(dst unsafe.Pointer, src devicePtr, bytes uint64) cuResult
	cuMemcpyDtoDAsync     func(dst, src devicePtr, bytes uint64, stream cuHandle) cuResult
	cuMemsetD8Async       func(dst devicePtr, v uint8, n uint64, stream cuHandle) cuResult
	cuMemsetD32Async      func(dst devicePtr, v uint32, n uint64, stream cuHandle) cuResult
	cuModuleLoadData      func(mod *cuHandle, image unsafe.Pointer) cuResult
	cuModuleGetFunction   func(fn *cuHandle, mod cuHandle, name string) cuResult
	cuModuleUnload        func(mod cuHandle) cuResult
	cuFuncSetAttribute    func(fn cuHandle, attr int32, v int32) cuResult
	cuLaunchKernel        func(fn cuHandle, gx, gy, gz, bx, by, bz, shared uint32, stream cuHandle, params, extra unsafe.Pointer) cuResult
	cuStreamCreate        func(stream *cuHandle, flags uint32) cuResult
	cuStreamSynchronize   func(stream cuHandle) cuResult
	cuStreamDestroy       func(stream cuHandle) cuResult
	cuEventCreate         func(ev *cuHandle, flags uint32) cuResult
	cuEventRecord         func(ev, stream cuHandle) cuResult
	cuEventSynchronize    func(ev cuHandle) cuResult
	cuEventElapsedTime    func(ms *float32, start, end cuHandle) cuResult
	cuEventDestroy        func(ev cuHandle) cuResult
	cuGetErrorName        func(code cuResult, str **byte) cuResult
	cuGetErrorString      func(code cuResult, str **byte) cuResult
}

var (
	driverOnce sync.Once
	driverLib  *driver
	driverErr  error
)

// loadDriver opens libcuda once and binds its entry points. The error says
// in one line why the driver is unusable ("NVIDIA driver not found: ...").
func loadDriver() (*driver, error) {
	driverOnce.Do(func() { driverLib, driverErr = openDriver() })
	return driverLib, driverErr
}

func openDriver() (*driver, error) {
	h, path, err := openLibrary("NVIDIA driver", driverNames)
	if err != nil {
		return nil, err
	}
	return bindDriver(h, path)
}

// bindDriver binds the driver API entry points from the library with
// handle h (libcuda, or the CUDA emulator's library), loaded from path.
func bindDriver(h uintptr, path string) (*driver, error) {
	d := &driver{path: path}
	err := bindAll("libcuda", h, []symbol{
		{&d.cuInit, "cuInit"}, {&d.cuDriverGetVersion, "cuDriverGetVersion"},
		{&d.cuDeviceGetCount, "cuDeviceGetCount"}, {&d.cuDeviceGet, "cuDeviceGet"},
		{&d.cuDeviceGetName, "cuDeviceGetName"}, {&d.cuDeviceGetAttribute, "cuDeviceGetAttribute"},
		{&d.cuDeviceTotalMem, "cuDeviceTotalMem_v2"},
		{&d.cuDevicePrimaryCtxRet, "cuDevicePrimaryCtxRetain"},
		{&d.cuCtxSetCurrent, "cuCtxSetCurrent"}, {&d.cuCtxSynchronize, "cuCtxSynchronize"},
		{&d.cuMemAlloc, "cuMemAlloc_v2"}, {&d.cuMemFree, "cuMemFree_v2"}, {&d.cuMemGetInfo, "cuMemGetInfo_v2"},
		{&d.cuMemcpyHtoD, "cuMemcpyHtoD_v2"}, {&d.cuMemcpyDtoH, "cuMemcpyDtoH_v2"},
		{&d.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"},
		{&d.cuMemsetD8Async, "cuMemsetD8Async"}, {&d.cuMemsetD32Async, "cuMemsetD32Async"},
		{&d.cuModuleLoadData, "cuModuleLoadData"}, {&d.cuModuleGetFunction, "cuModuleGetFunction"},
		{&d.cuModuleUnload, "cuModuleUnload"}, {&d.cuFuncSetAttribute, "cuFuncSetAttribute"},
		{&d.cuLaunchKernel, "cuLaunchKernel"},
		{&d.cuStreamCreate, "cuStreamCreate"}, {&d.cuStreamSynchronize, "cuStreamSynchronize"},
		{&d.cuEventCreate, "cuEventCreate"}, {&d.cuEventRecord, "cuEventRecord"},
		{&d.cuEventSynchronize, "cuEventSynchronize"}, {&d.cuEventElapsedTime, "cuEventElapsedTime"},
		{&d.cuGetErrorName, "cuGetErrorName"}, {&d.cuGetErrorString, "cuGetErrorString"},
	})
	if err != nil {
		return nil, err
	}
	// The _v2 destroy and release entry points came with CUDA 11/12; older
	// drivers export only the plain names (same ABI).
	for _, alt := range []struct {
		ptr   any
		names []string
	}{
		{&d.cuDevicePrimaryCtxRel, []string{"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}},
		{&d.cuStreamDestroy, []string{"cuStreamDestroy_v2", "cuStreamDestroy"}},
		{&d.cuEventDestroy, []string{"cuEventDestroy_v2", "cuEventDestroy"}},
	} {
		ok := false
		for _, n := range alt.names {
			if bindOptional(h, symbol{alt.ptr, n}) {
				ok = true
				break
			}
		}
		if !ok {
			return nil, fmt.Errorf("libcuda lacks %s", alt.names[0])
		}
	}
	return d, nil
}

// check turns a CUresult into an error carrying the call, the driver's name
// and description for the code, and the code: "cuMemAlloc_v2:
// CUDA_ERROR_OUT_OF_MEMORY (2): out of memory".
func (d *driver) check(call string, code cuResult) error {
	if code == 0 {
		return nil
	}
	return &apiError{API: "CUDA driver", Call: call, Code: int(code), Name: d.errorName(code), Text: d.errorString(code)}
}

func (d *driver) errorName(code cuResult) string {
	var p *byte
	if d.cuGetErrorName(code, &p) == 0 && p != nil {
		return cString(p)
	}
	return "CUDA_ERROR_UNKNOWN_CODE"
}

func (d *driver) errorString(code cuResult) string {
	var p *byte
	if d.cuGetErrorString(code, &p) == 0 && p != nil {
		return cString(p)
	}
	return ""
}

// apiError is a failed call into a CUDA library.
type apiError struct {
	API  string // "CUDA driver", "NVRTC", "cuBLAS"
	Call string // the entry point
	Code int    // the numeric status
	Name string // the library's name for the status
	Text string // the library's description, if it has one
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("%s: %s (%d)", e.Call, e.Name, e.Code)
	if e.Text != "" && e.Text != e.Name {
		s += ": " + e.Text
	}
	return s
}
