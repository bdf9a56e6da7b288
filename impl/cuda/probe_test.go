package cuda

import (
	"strings"
	"testing"
)

// TestProbeAtOpen: a device that cannot launch the probe kernel, or runs
// it and computes something else, is unavailable with the reason in one
// line, and the failed start releases what it took on the device.
func TestProbeAtOpen(t *testing.T) {
	requireNVRTC(t)
	t.Setenv(cacheEnv, "off")
	for _, tc := range []struct {
		name  string
		setup func(*fakeDevice)
		want  []string
	}{
		{"launch fails", func(f *fakeDevice) { f.failKernel = "probe_f32" }, []string{"probe kernel", "probe_f32", "CUDA_ERROR_LAUNCH_FAILED"}},
		{"wrong values", func(f *fakeDevice) { f.probeWrong = true }, []string{"probe kernel", "out[174]", "does not compute"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeDevice()
			tc.setup(f)
			b := openWith(0, FP32, func() (*driver, error) { return f.driver(), nil })
			defer b.Close()
			info := b.Info()
			if info.Available || strings.Contains(info.Reason, "\n") {
				t.Fatalf("available=%v reason %q", info.Available, info.Reason)
			}
			for _, w := range tc.want {
				if !strings.Contains(info.Reason, w) {
					t.Errorf("reason %q lacks %q", info.Reason, w)
				}
			}
			if a, h := f.allocations(), f.liveHandles(); len(a) != 0 || len(h) != 0 {
				t.Errorf("the failed start left allocations %v and handles %v", a, h)
			}
		})
	}
}
