package cuda

import (
	"fmt"
	"runtime"
	"sort"
	"sync"
	"unsafe"
)

// nvrtc holds the NVRTC entry points. CUBIN output (nvrtcGetCUBIN) and the
// list of supported architectures are optional: NVRTC before 11.1/11.2
// lacks them, and this package then compiles PTX.
type nvrtc struct {
	path         string
	major, minor int
	archs        []int // supported sm_XX, ascending; nil when NVRTC cannot list them

	nvrtcVersion              func(major, minor *int32) int32
	nvrtcGetErrorString       func(code int32) *byte
	nvrtcCreateProgram        func(prog *uintptr, src, name string, numHeaders int32, headers, includeNames unsafe.Pointer) int32
	nvrtcCompileProgram       func(prog uintptr, numOptions int32, options unsafe.Pointer) int32
	nvrtcGetProgramLogSize    func(prog uintptr, size *uint64) int32
	nvrtcGetProgramLog        func(prog uintptr, log *byte) int32
	nvrtcGetPTXSize           func(prog uintptr, size *uint64) int32
	nvrtcGetPTX               func(prog uintptr, ptx *byte) int32
	nvrtcGetCUBINSize         func(prog uintptr, size *uint64) int32
	nvrtcGetCUBIN             func(prog uintptr, cubin *byte) int32
	nvrtcDestroyProgram       func(prog *uintptr) int32
	nvrtcGetNumSupportedArchs func(n *int32) int32
	nvrtcGetSupportedArchs    func(archs *int32) int32
}

var (
	nvrtcOnce sync.Once
	nvrtcLib  *nvrtc
	nvrtcErr  error
)

// loadNVRTC opens NVRTC once. The error reads "NVRTC not found: ..." when
// no library loads.
func loadNVRTC() (*nvrtc, error) {
	nvrtcOnce.Do(func() { nvrtcLib, nvrtcErr = openNVRTC(nvrtcNames) })
	return nvrtcLib, nvrtcErr
}

func openNVRTC(names []string) (*nvrtc, error) {
	h, path, err := openLibrary("NVRTC", names)
	if err != nil {
		return nil, err
	}
	return bindNVRTC(h, path)
}

// bindNVRTC binds the NVRTC entry points from the library with handle h
// (libnvrtc, or the CUDA emulator's library), loaded from path, and reads
// its version and architectures.
func bindNVRTC(h uintptr, path string) (*nvrtc, error) {
	n := &nvrtc{path: path}
	if err := bindAll("libnvrtc", h, []symbol{
		{&n.nvrtcVersion, "nvrtcVersion"}, {&n.nvrtcGetErrorString, "nvrtcGetErrorString"},
		{&n.nvrtcCreateProgram, "nvrtcCreateProgram"}, {&n.nvrtcCompileProgram, "nvrtcCompileProgram"},
		{&n.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize"}, {&n.nvrtcGetProgramLog, "nvrtcGetProgramLog"},
		{&n.nvrtcGetPTXSize, "nvrtcGetPTXSize"}, {&n.nvrtcGetPTX, "nvrtcGetPTX"},
		{&n.nvrtcDestroyProgram, "nvrtcDestroyProgram"},
	}); err != nil {
		return nil, err
	}
	if !bindOptional(h, symbol{&n.nvrtcGetCUBINSize, "nvrtcGetCUBINSize"}) ||
		!bindOptional(h, symbol{&n.nvrtcGetCUBIN, "nvrtcGetCUBIN"}) {
		n.nvrtcGetCUBINSize, n.nvrtcGetCUBIN = nil, nil
	}
	var major, minor int32
	if err := n.check("nvrtcVersion", n.nvrtcVersion(&major, &minor)); err != nil {
		return nil, err
	}
	n.major, n.minor = int(major), int(minor)
	if bindOptional(h, symbol{&n.nvrtcGetNumSupportedArchs, "nvrtcGetNumSupportedArchs"}) &&
		bindOptional(h, symbol{&n.nvrtcGetSupportedArchs, "nvrtcGetSupportedArchs"}) {
		var cnt int32
		if n.nvrtcGetNumSupportedArchs(&cnt) == 0 && cnt > 0 && cnt < 256 {
			a := make([]int32, cnt)
			if n.nvrtcGetSupportedArchs(&a[0]) == 0 {
				for _, v := range a {
					n.archs = append(n.archs, int(v))
				}
				sort.Ints(n.archs)
			}
		}
	}
	return n, nil
}

// version is "major.minor".
func (n *nvrtc) version() string { return fmt.Sprintf("%d.%d", n.major, n.minor) }

// check turns an nvrtcResult into an error with NVRTC's string for it.
func (n *nvrtc) check(call string, code int32) error {
	if code == 0 {
		return nil
	}
	name := cString(n.nvrtcGetErrorString(code))
	if name == "" {
		name = "NVRTC_ERROR_UNKNOWN"
	}
	return &apiError{API: "NVRTC", Call: call, Code: int(code), Name: name}
}

// target is what a compilation produces code for.
type target struct {
	Arch  int  // compute capability as major·10 + minor: 80, 90
	CUBIN bool // true: machine code (sm_XX); false: PTX (compute_XX)
}

func (t target) String() string {
	if t.CUBIN {
		return fmt.Sprintf("sm_%d", t.Arch)
	}
	return fmt.Sprintf("compute_%d", t.Arch)
}

// targetFor picks the best target this NVRTC can produce for a device of
// compute capability arch: a CUBIN for exactly that architecture when NVRTC
// supports it and can emit CUBINs, otherwise PTX for the newest supported
// architecture not above it, which the driver compiles at load time.
func (n *nvrtc) targetFor(arch int) (target, error) {
	if n.archs == nil {
		// NVRTC 11.0/11.1 cannot list its architectures: trust the device's.
		return target{Arch: arch, CUBIN: n.nvrtcGetCUBIN != nil}, nil
	}
	best := 0
	for _, a := range n.archs {
		if a == arch && n.nvrtcGetCUBIN != nil {
			return target{Arch: arch, CUBIN: true}, nil
		}
		if a <= arch {
			best = a
		}
	}
	if best == 0 {
		return target{}, fmt.Errorf("NVRTC %s supports sm_%d..sm_%d, none at or below the device's sm_%d",
			n.version(), n.archs[0], n.archs[len(n.archs)-1], arch)
	}
	return target{Arch: best}, nil
}

// compileOptions are the NVRTC options of every kernel: no fast-math, so
// that expf, erff and division round as the conformance tolerances assume.
func compileOptions(t target) []string {
	return []string{"--gpu-architecture=" + t.String(), "-default-device", "--std=c++17", "-lineinfo"}
}

// compileError is a kernel source that NVRTC rejected.
type compileError struct {
	Kernel string // the .cu file
	Target string
	Err    error
	Log    string
}

func (e *compileError) Error() string {
	return fmt.Sprintf("compiling kernel %s for %s: %v\n%s", e.Kernel, e.Target, e.Err, e.Log)
}

func (e *compileError) Unwrap() error { return e.Err }

// compile compiles source (the file name) for t and returns the CUBIN or
// PTX. A failed compilation returns a *compileError with NVRTC's log.
func (n *nvrtc) compile(name, source string, t target) ([]byte, error) {
	var prog uintptr
	if err := n.check("nvrtcCreateProgram", n.nvrtcCreateProgram(&prog, source, name, 0, nil, nil)); err != nil {
		return nil, &compileError{Kernel: name, Target: t.String(), Err: err}
	}
	defer n.nvrtcDestroyProgram(&prog)
	opts := compileOptions(t)
	bufs, ptrs := cStrings(opts)
	var pin runtime.Pinner
	for _, b := range bufs {
		pin.Pin(&b[0])
	}
	pin.Pin(&ptrs[0])
	code := n.nvrtcCompileProgram(prog, int32(len(ptrs)), unsafe.Pointer(&ptrs[0]))
	pin.Unpin()
	if err := n.check("nvrtcCompileProgram", code); err != nil {
		return nil, &compileError{Kernel: name, Target: t.String(), Err: err, Log: n.log(prog)}
	}
	size, get, call := n.nvrtcGetPTXSize, n.nvrtcGetPTX, "nvrtcGetPTX"
	if t.CUBIN {
		size, get, call = n.nvrtcGetCUBINSize, n.nvrtcGetCUBIN, "nvrtcGetCUBIN"
	}
	var sz uint64
	if err := n.check(call+"Size", size(prog, &sz)); err != nil {
		return nil, &compileError{Kernel: name, Target: t.String(), Err: err}
	}
	if sz == 0 {
		return nil, &compileError{Kernel: name, Target: t.String(), Err: fmt.Errorf("%s returned no code", call)}
	}
	out := make([]byte, sz)
	if err := n.check(call, get(prog, &out[0])); err != nil {
		return nil, &compileError{Kernel: name, Target: t.String(), Err: err}
	}
	return out, nil
}

// log returns the program's compilation log.
func (n *nvrtc) log(prog uintptr) string {
	var sz uint64
	if n.nvrtcGetProgramLogSize(prog, &sz) != 0 || sz <= 1 {
		return ""
	}
	buf := make([]byte, sz)
	if n.nvrtcGetProgramLog(prog, &buf[0]) != 0 {
		return ""
	}
	for len(buf) > 0 && buf[len(buf)-1] == 0 {
		buf = buf[:len(buf)-1]
	}
	return string(buf)
}
