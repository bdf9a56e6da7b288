package cuda

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"vitbench/bench"
)

// The CUDA emulator (emu/): the driver API, NVRTC and cuBLAS the backend
// binds, implemented on the host in one C++ library that this file builds
// with g++ at first use and loads through purego like the real libraries.
// Its NVRTC compiles the same kernel sources for the host, so the
// unchanged backend runs as "cuda-emu" (strict fp32) and "cuda-emu-tf32",
// "cuda-emu-bf16", "cuda-emu-fp16" (the products' inputs rounded as the
// tensor cores round them), checked and agreed like any other backend.

// emuFS holds the emulator's sources.
//
//go:embed emu/*.cc emu/*.h
var emuFS embed.FS

// Environment of the emulator's build.
const (
	// emuCXXEnv names the C++ compiler (default g++).
	emuCXXEnv = "VITBENCH_CUDA_EMU_CXX"
	// emuSanitizeEnv, when set to a -fsanitize list such as
	// "address,undefined", builds the emulator and every kernel with those
	// sanitizers. AddressSanitizer's runtime must then be the process's
	// first library: LD_PRELOAD=$(g++ -print-file-name=libasan.so), with
	// ASAN_OPTIONS=protect_shadow_gap=0 for the Go heap's addresses.
	emuSanitizeEnv = "VITBENCH_CUDA_EMU_SANITIZE"
)

// emuLibName is the emulator library's file name.
const emuLibName = "libvitbench-cuemu.so"

func init() {
	for _, m := range []Math{FP32, TF32, BF16, FP16} {
		name := emuBackendName(m)
		bench.RegisterBackend(name, func(int) (bench.Backend, error) { return OpenEmulator(m), nil })
	}
}

// emuBackendName is "cuda-emu" followed by the math's suffix
// ("cuda-emu-bf16"), so that the tolerance classes of the precision apply.
func emuBackendName(m Math) string {
	return "cuda-emu" + strings.TrimPrefix(m.BackendName(), "cuda")
}

// OpenEmulator starts the backend on the CUDA emulator with products
// computed as m says. Without a C++ compiler it is unavailable, with the
// reason.
func OpenEmulator(m Math) *Backend {
	return openLibs(0, m, emuBackendName(m), emuLibs)
}

// emuLibs binds the three APIs from the emulator's one library.
var emuLibs = libSet{
	driver: func() (*driver, error) {
		h, path, err := loadEmulator()
		if err != nil {
			return nil, err
		}
		return bindDriver(h, path)
	},
	nvrtc: func() (*nvrtc, error) {
		h, path, err := loadEmulator()
		if err != nil {
			return nil, err
		}
		return bindNVRTC(h, path)
	},
	cublas: func() (*cublas, error) {
		h, path, err := loadEmulator()
		if err != nil {
			return nil, err
		}
		return bindCuBLAS(h, path)
	},
}

var (
	emuOnce   sync.Once
	emuHandle uintptr
	emuPath   string
	emuErr    error
)

// loadEmulator builds the emulator library when its build directory does
// not hold it yet and dlopens it, once.
func loadEmulator() (uintptr, string, error) {
	emuOnce.Do(func() {
		emuPath, emuErr = buildEmulator()
		if emuErr != nil {
			emuErr = fmt.Errorf("CUDA emulator: %w", emuErr)
			return
		}
		emuHandle, emuErr = dlopenGlobal(emuPath)
		if emuErr != nil {
			emuErr = fmt.Errorf("CUDA emulator: loading %s: %v", emuPath, oneLine(emuErr.Error()))
		}
	})
	return emuHandle, emuPath, emuErr
}

// emuBuild is one configuration of the emulator's build.
type emuBuild struct {
	cxx      string   // the compiler's path
	sanitize string   // the -fsanitize list, or ""
	sources  []string // the .cc files, sorted
	files    map[string][]byte
}

// libFlags are the compiler flags of the emulator library.
func (e emuBuild) libFlags() []string {
	f := []string{"-std=c++17", "-O2", "-g", "-fPIC", "-shared", "-pthread", "-fvisibility=hidden",
		"-DEMU_KERNEL_FLAGS=\"" + strings.Join(e.kernelFlags(), " ") + "\"", "-DEMU_CXX=\"" + e.cxx + "\""}
	return append(f, e.sanitizeFlags()...)
}

// kernelFlags are the flags the emulator's NVRTC adds to every kernel.
func (e emuBuild) kernelFlags() []string {
	return append([]string{"-O2", "-g"}, e.sanitizeFlags()...)
}

func (e emuBuild) sanitizeFlags() []string {
	if e.sanitize == "" {
		return nil
	}
	return []string{"-fsanitize=" + e.sanitize, "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"}
}

// key identifies the build: compiler, flags and every source byte.
func (e emuBuild) key() string {
	h := sha256.New()
	fmt.Fprintf(h, "cxx %s\nflags %s\n", e.cxx, strings.Join(e.libFlags(), " "))
	names := make([]string, 0, len(e.files))
	for n := range e.files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(h, "file %s %x\n", n, sha256.Sum256(e.files[n]))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// newEmuBuild reads the embedded sources (not the C++ unit tests) and
// finds the compiler.
func newEmuBuild() (emuBuild, error) {
	e := emuBuild{files: map[string][]byte{}, sanitize: os.Getenv(emuSanitizeEnv)}
	name := os.Getenv(emuCXXEnv)
	if name == "" {
		name = "g++"
	}
	cxx, err := exec.LookPath(name)
	if err != nil {
		return e, fmt.Errorf("no C++ compiler to build it (%s, or set %s): %v", name, emuCXXEnv, err)
	}
	e.cxx = cxx
	entries, err := fs.ReadDir(emuFS, "emu")
	if err != nil {
		return e, err
	}
	for _, ent := range entries {
		n := ent.Name()
		if strings.HasSuffix(n, "_test.cc") {
			continue
		}
		data, err := emuFS.ReadFile("emu/" + n)
		if err != nil {
			return e, err
		}
		e.files[n] = data
		if strings.HasSuffix(n, ".cc") {
			e.sources = append(e.sources, n)
		}
	}
	sort.Strings(e.sources)
	return e, nil
}

// buildEmulator returns the path of the emulator library for this
// configuration, compiling it into the kernel cache directory (a
// temporary one when the cache is off) unless it is there already.
func buildEmulator() (string, error) {
	e, err := newEmuBuild()
	if err != nil {
		return "", err
	}
	if e.sanitize != "" && !strings.Contains(os.Getenv("LD_PRELOAD"), "libasan") && strings.Contains(e.sanitize, "address") {
		return "", fmt.Errorf("%s=%s needs AddressSanitizer's runtime preloaded: LD_PRELOAD=$(%s -print-file-name=libasan.so) ASAN_OPTIONS=protect_shadow_gap=0",
			emuSanitizeEnv, e.sanitize, filepath.Base(e.cxx))
	}
	parent := cacheDir()
	if parent == "" {
		parent = filepath.Join(os.TempDir(), "vitbench-cuda-emu")
	}
	dir := filepath.Join(parent, "emu-"+e.key())
	lib := filepath.Join(dir, emuLibName)
	if fileExists(lib) {
		return lib, nil
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(parent, ".emu-build-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	for n, data := range e.files {
		if err := os.WriteFile(filepath.Join(tmp, n), data, 0o644); err != nil {
			return "", err
		}
	}
	args := append(e.libFlags(), "-o", emuLibName)
	args = append(args, e.sources...)
	args = append(args, "-ldl")
	cmd := exec.Command(e.cxx, args...)
	cmd.Dir = tmp
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building %s with %s: %v\n%s", emuLibName, e.cxx, err, out.String())
	}
	// Another process may have finished the same build first: either
	// directory is whole, so keep the one in place.
	if err := os.Rename(tmp, dir); err != nil && !fileExists(lib) {
		return "", err
	}
	if !fileExists(lib) {
		return "", errors.New("the build left no " + emuLibName)
	}
	return lib, nil
}
