package cuda

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
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
	// builtins is the libnvrtc-builtins loaded from NVRTC's directory
	// before any compile ("" when none was); builtinsNote says why none
	// was, or that the loader's search provides it.
	builtins, builtinsNote string

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

// loadNVRTC opens NVRTC once, passing over versions newer than the
// machine's driver supports. The error reads "NVRTC not found: ..." when no
// library loads.
func loadNVRTC() (*nvrtc, error) {
	nvrtcOnce.Do(func() { nvrtcLib, nvrtcErr = openNVRTC(nvrtcNames, driverCUDAVersion()) })
	return nvrtcLib, nvrtcErr
}

// driverCUDAVersion returns the CUDA version the machine's driver supports
// as cuDriverGetVersion reports it (1000·major + 10·minor: 12040 is 12.4),
// or 0 when no driver loads. cuInit is not needed for it.
func driverCUDAVersion() int {
	d, err := loadDriver()
	if err != nil || d.cuDriverGetVersion == nil {
		return 0
	}
	var v int32
	if d.cuDriverGetVersion(&v) != 0 || v <= 0 {
		return 0
	}
	return int(v)
}

// openNVRTC opens the first NVRTC of names whose major version the driver
// supports (driverVersion as cuDriverGetVersion gives it; 0: no driver, no
// limit), binds it and loads its builtins from its directory.
func openNVRTC(names []string, driverVersion int) (*nvrtc, error) {
	search := libSearch{what: "NVRTC", names: names}
	if driverVersion > 0 {
		search.reject = func(h uintptr, _ string) string { return nvrtcTooNew(h, driverVersion) }
	}
	h, path, err := search.run()
	if err != nil {
		return nil, err
	}
	n, err := bindNVRTC(h, path)
	if err != nil {
		return nil, err
	}
	n.preloadBuiltins()
	return n, nil
}

// nvrtcTooNew says why the NVRTC with handle h cannot serve a driver of
// driverVersion (its major version is newer: the driver would refuse its
// CUBINs and PTX), or "" when it can or its version cannot be read.
func nvrtcTooNew(h uintptr, driverVersion int) string {
	var version func(major, minor *int32) int32
	if !bindOptional(h, symbol{&version, "nvrtcVersion"}) {
		return ""
	}
	var major, minor int32
	if version(&major, &minor) != 0 || int(major) <= driverVersion/1000 {
		return ""
	}
	return fmt.Sprintf("NVRTC %d.%d is newer than the driver's CUDA %d.%d", major, minor,
		driverVersion/1000, driverVersion%1000/10)
}

// builtinsPaths lists the libnvrtc-builtins files in dir for NVRTC
// major.minor, best first: libnvrtc-builtins.so.<major>.<minor> (the name
// NVRTC dlopens), then any libnvrtc-builtins.so.<major>*, then any
// libnvrtc-builtins*.so* (CUDA 13's wheels and other layouts).
func builtinsPaths(dir string, major, minor int) []string {
	exact := filepath.Join(dir, fmt.Sprintf("libnvrtc-builtins.so.%d.%d", major, minor))
	return existingFirst([]string{exact},
		filepath.Join(dir, fmt.Sprintf("libnvrtc-builtins.so.%d*", major)),
		filepath.Join(dir, "libnvrtc-builtins*.so*"))
}

// preloadBuiltins loads libnvrtc-builtins from NVRTC's own directory, when
// NVRTC was opened by a path with one. NVRTC dlopens its builtins by bare
// name at the first compile, which fails (NVRTC_ERROR_BUILTIN_OPERATION_
// FAILURE on every compile) when that directory, a Python wheel's say, is
// not on the loader's path; a copy already loaded with RTLD_GLOBAL under
// that SONAME is found instead. Finding none is not an error (the loader
// may have one): it is recorded in builtinsNote.
func (n *nvrtc) preloadBuiltins() {
	if !strings.Contains(n.path, "/") {
		n.builtinsNote = "builtins from the loader's search"
		return
	}
	dir := filepath.Dir(n.path)
	paths := builtinsPaths(dir, n.major, n.minor)
	_, p, loadErr := preloadFromDir(paths)
	switch {
	case p != "":
		n.builtins = p
	case len(paths) == 0:
		n.builtinsNote = fmt.Sprintf("no libnvrtc-builtins.so.%d.%d in %s: builtins from the loader's search", n.major, n.minor, dir)
	default:
		n.builtinsNote = fmt.Sprintf("builtins in %s do not load (%s): builtins from the loader's search", dir, loadErr)
	}
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

// nvrtcBuiltinFailure is NVRTC_ERROR_BUILTIN_OPERATION_FAILURE, what every
// compile returns when NVRTC cannot load its builtins library.
const nvrtcBuiltinFailure = 7

// compile compiles source (the file name) for t and returns the CUBIN or
// PTX. A failed compilation returns a *compileError with NVRTC's log.
func (n *nvrtc) compile(name, source string, t target) ([]byte, error) {
	code, _, err := n.compileWith(name, source, t, nil)
	return code, err
}

// compileWith is compile with extra NVRTC options after compileOptions(t)
// (a test's --ptxas-options=-v; never part of a cached compile) and also
// returns the compilation log of a successful compile.
func (n *nvrtc) compileWith(name, source string, t target, extra []string) ([]byte, string, error) {
	var prog uintptr
	if err := n.check("nvrtcCreateProgram", n.nvrtcCreateProgram(&prog, source, name, 0, nil, nil)); err != nil {
		return nil, "", &compileError{Kernel: name, Target: t.String(), Err: err}
	}
	defer n.nvrtcDestroyProgram(&prog)
	opts := append(compileOptions(t), extra...)
	bufs, ptrs := cStrings(opts)
	var pin runtime.Pinner
	for _, b := range bufs {
		pin.Pin(&b[0])
	}
	pin.Pin(&ptrs[0])
	code := n.nvrtcCompileProgram(prog, int32(len(ptrs)), unsafe.Pointer(&ptrs[0]))
	pin.Unpin()
	log := n.log(prog)
	if err := n.check("nvrtcCompileProgram", code); err != nil {
		if code == nvrtcBuiltinFailure && n.builtinsNote != "" {
			err = fmt.Errorf("%w (%s)", err, n.builtinsNote)
		}
		return nil, log, &compileError{Kernel: name, Target: t.String(), Err: err, Log: log}
	}
	out, err := n.output(prog, t)
	if err != nil {
		return nil, log, &compileError{Kernel: name, Target: t.String(), Err: err}
	}
	return out, log, nil
}

// output returns the compiled program's CUBIN, or PTX when t is PTX.
func (n *nvrtc) output(prog uintptr, t target) ([]byte, error) {
	size, get, call := n.nvrtcGetPTXSize, n.nvrtcGetPTX, "nvrtcGetPTX"
	if t.CUBIN {
		size, get, call = n.nvrtcGetCUBINSize, n.nvrtcGetCUBIN, "nvrtcGetCUBIN"
	}
	var sz uint64
	if err := n.check(call+"Size", size(prog, &sz)); err != nil {
		return nil, err
	}
	if sz == 0 {
		return nil, fmt.Errorf("%s returned no code", call)
	}
	out := make([]byte, sz)
	if err := n.check(call, get(prog, &out[0])); err != nil {
		return nil, err
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
