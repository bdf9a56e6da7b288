package cuda

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"vitbench/bench"
)

// noSystemLibs makes the library search see only VITBENCH_CUDA_LIBS, set
// to dir, and forgets libraries loaded so far; everything is restored
// when the test ends.
func noSystemLibs(t *testing.T, dir string) {
	t.Helper()
	t.Setenv(libsEnv, dir)
	saved := searchLocations
	searchLocations = func() []string { return nil }
	resetLoaders()
	t.Cleanup(func() {
		searchLocations = saved
		resetLoaders()
	})
}

// resetLoaders forgets the loaded libraries so the next use searches again.
func resetLoaders() {
	driverOnce, driverLib, driverErr = sync.Once{}, nil, nil
	nvrtcOnce, nvrtcLib, nvrtcErr = sync.Once{}, nil, nil
	cublasOnce, cublasLib, cublasErr = sync.Once{}, nil, nil
}

// TestMissingLibraries: with nothing to find, each loader says in one line
// which library is missing and where it looked, and the backend opens
// unavailable with that reason, answering NS for every op.
func TestMissingLibraries(t *testing.T) {
	noSystemLibs(t, t.TempDir())
	for _, c := range []struct {
		what string
		open func() error
	}{
		{"NVIDIA driver not found", func() error { _, err := loadDriver(); return err }},
		{"NVRTC not found", func() error { _, err := loadNVRTC(); return err }},
		{"cuBLAS not found", func() error { _, err := loadCuBLAS(); return err }},
	} {
		err := c.open()
		if err == nil {
			t.Fatalf("%s: loaded with an empty search path", c.what)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, c.what+":") || strings.Contains(msg, "\n") || !strings.Contains(msg, libsEnv) {
			t.Errorf("error %q: want one line starting %q and naming %s", msg, c.what, libsEnv)
		}
		if !errors.Is(err, errLibNotFound) {
			t.Errorf("%q does not wrap errLibNotFound", msg)
		}
	}
	for _, name := range []string{"cuda", "cuda-tf32", "cuda-bf16", "cuda-fp16"} {
		be, err := bench.OpenBackend(name, 0)
		if err != nil {
			t.Fatal(err)
		}
		info := be.Info()
		if info.Available || !strings.HasPrefix(info.Reason, "NVIDIA driver not found:") || strings.Contains(info.Reason, "\n") {
			t.Fatalf("%s: available=%v reason %q", name, info.Available, info.Reason)
		}
		for op := range opsWithKernels {
			for _, dt := range []bench.DType{bench.Float32, bench.BFloat16} {
				if err := be.Supports(op, dt); err == nil || !strings.Contains(err.Error(), "NVIDIA driver not found") {
					t.Errorf("%s: Supports(%s, %s) = %v, want the driver's reason", name, op, dt, err)
				}
			}
		}
		if _, err := be.Alloc(bench.Shape{1}, bench.Float32); err == nil {
			t.Error("unavailable backend allocates")
		}
		if _, err := be.Time(func() error { return nil }); err == nil {
			t.Error("unavailable backend times")
		}
		if err := be.Enqueue(nil, nil, nil); err == nil {
			t.Error("unavailable backend enqueues")
		}
		if err := be.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestOverrideDirectoryFirst: a library in a VITBENCH_CUDA_LIBS directory
// is the one loaded.
func TestOverrideDirectoryFirst(t *testing.T) {
	real := ""
	for _, c := range candidatePaths(nvrtcNames) {
		if strings.Contains(c, "/") && fileExists(c) {
			real = c
			break
		}
	}
	if real == "" {
		t.Skip("no NVRTC file in the standard directories to link to")
	}
	dir := t.TempDir()
	link := dir + "/libnvrtc.so.11.2"
	if err := symlink(real, link); err != nil {
		t.Fatal(err)
	}
	noSystemLibs(t, dir)
	n, err := loadNVRTC()
	if err != nil {
		t.Fatalf("NVRTC in %s not loaded: %v", dir, err)
	}
	if n.path != link {
		t.Errorf("loaded %s, want %s", n.path, link)
	}
}

// TestSupportsReasons: an available backend names the dtype and cuBLAS in
// its NS reasons, and knows no op it has no kernel for.
func TestSupportsReasons(t *testing.T) {
	b := &Backend{name: "cuda", info: bench.Info{Available: true}}
	if err := b.Supports("gemm", bench.Float32); err != nil {
		t.Errorf("gemm float32: %v", err)
	}
	if err := b.Supports("gemm", bench.BFloat16); err == nil || !strings.Contains(err.Error(), "bfloat16") {
		t.Errorf("gemm bfloat16: %v", err)
	}
	if err := b.Supports("no_such_op", bench.Float32); err == nil || !strings.Contains(err.Error(), "no kernel") {
		t.Errorf("unknown op: %v", err)
	}
	b.blasErr = errors.New("cuBLAS not found: test")
	if err := b.Supports("conv2d", bench.Float32); err == nil || !strings.Contains(err.Error(), "cuBLAS not found") {
		t.Errorf("conv2d without cuBLAS: %v", err)
	}
	if err := b.Supports("layernorm", bench.Float32); err != nil {
		t.Errorf("layernorm without cuBLAS: %v", err)
	}
}

// TestDeviceIfPresent runs a small graph end to end when this machine has
// a GPU (never in CI): a GEMM with bias and GELU against a plain loop.
func TestDeviceIfPresent(t *testing.T) {
	b := Open(0, FP32)
	defer b.Close()
	if !b.Info().Available {
		t.Skipf("no CUDA device: %s", b.Info().Reason)
	}
	t.Logf("device %s %v", b.Info().Device, b.Info().Details)
	testDeviceGemm(t, b)
}
