package cuda

import (
	"errors"
	"os"
	"testing"
	"time"
)

// requireNVRTC returns the NVRTC library, or skips the test when it cannot
// be loaded, except under CI (CI set), where a missing NVRTC fails: the
// compile checks are what CI proves about the CUDA backend.
func requireNVRTC(t *testing.T) *nvrtc {
	t.Helper()
	n, err := loadNVRTC()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but NVRTC cannot be loaded (ci/install-deps.sh installs libnvrtc11.2): %v", err)
		}
		t.Skipf("NVRTC not available: %v", err)
	}
	return n
}

// unavailable skips the test for reason, or fails it when CI is set.
func unavailable(t *testing.T, reason string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set but %s", reason)
	}
	t.Skip(reason)
}

// TestCompileEveryKernel compiles every embedded kernel source with NVRTC
// for sm_80 and sm_90 (CUBIN where NVRTC can emit one, PTX otherwise), as
// the backend would for an A100 or an H100/H200.
func TestCompileEveryKernel(t *testing.T) {
	n := requireNVRTC(t)
	t.Logf("NVRTC %s from %s, architectures %v", n.version(), n.path, n.archs)
	files := kernelFiles()
	if len(files) < 8 {
		t.Fatalf("only %d kernel sources embedded: %v", len(files), files)
	}
	for _, arch := range []int{80, 90} {
		tg, err := n.targetFor(arch)
		if err != nil {
			t.Fatalf("sm_%d: %v", arch, err)
		}
		for _, f := range files {
			src, err := kernelSource(f)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			code, err := n.compile(f, src, tg)
			if err != nil {
				var ce *compileError
				if errors.As(err, &ce) {
					t.Errorf("%s for %s:\n%s", f, tg, ce.Log)
					continue
				}
				t.Errorf("%s for %s: %v", f, tg, err)
				continue
			}
			t.Logf("%-18s %-9s %6d bytes in %v", f, tg, len(code), time.Since(start).Round(time.Millisecond))
		}
	}
}
