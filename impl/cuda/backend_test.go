package cuda

import (
	"strings"
	"testing"

	"vitbench/bench"
)

// TestUnavailableIsReported: with no driver (or no device) the backend
// still opens, says why in one line, and answers NS for every op.
func TestUnavailableIsReported(t *testing.T) {
	t.Setenv("VITBENCH_CUDA_LIBS", t.TempDir())
	b := Open(0)
	info := b.Info()
	if info.Available {
		if err := b.Supports("patch_embed", bench.Float32); err == nil {
			t.Fatal("a backend without kernels claims support")
		}
		t.Logf("a CUDA device is present: %s", info.Device)
		return
	}
	if info.Reason == "" || strings.Contains(info.Reason, "\n") {
		t.Errorf("reason %q is not one line", info.Reason)
	}
	if err := b.Supports("patch_embed", bench.Float32); err == nil {
		t.Error("unavailable backend supports an op")
	}
	if _, err := b.Alloc(bench.Shape{1}, bench.Float32); err == nil {
		t.Error("unavailable backend allocates")
	}
}
