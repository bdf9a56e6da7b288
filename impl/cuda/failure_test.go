package cuda

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"vitbench/bench"
	"vitbench/bench/cases"
	"vitbench/bench/ops"
	"vitbench/bench/runner"
)

// The device's failure modes on a simulated device (fakedriver_test.go):
// each is an error naming the call, the library's name for the code and
// what was asked for, it is that case's result, and the backend goes on
// with the next case. A missing driver and a kernel rejected by NVRTC on
// their own are TestMissingLibraries and TestCompileErrorNamesKernelAndLog.

const fixtureRoot = "../../fixtures"

// wantAll fails the test unless err's message contains every string.
func wantAll(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one containing %q", what, want)
		return
	}
	t.Logf("%s: %v", what, err)
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q lacks %q", what, err, w)
		}
	}
}

// layerNormOn allocates a small LayerNorm's tensors on b and returns the
// node and them.
func layerNormOn(t *testing.T, b *Backend) (bench.Node, []bench.Tensor, []bench.Tensor) {
	t.Helper()
	n := ops.LayerNorm{Batch: 2, Tokens: 3, Dim: 40, Eps: 1e-5}
	var ts []bench.Tensor
	for _, sh := range []bench.Shape{{2, 3, 40}, {40}, {40}, {2, 3, 40}} {
		x, err := b.Alloc(sh, bench.Float32)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Free(x) })
		ts = append(ts, x)
	}
	return n, ts[:3], ts[3:]
}

// avgPoolOn is layerNormOn for a small AvgPool2d (windows.cu).
func avgPoolOn(t *testing.T, b *Backend) (bench.Node, []bench.Tensor, []bench.Tensor) {
	t.Helper()
	n := ops.AvgPool2d{Batch: 1, Chans: 2, Height: 5, Width: 5, KH: 2, KW: 2, SH: 2, SW: 2}
	var ts []bench.Tensor
	for _, sh := range []bench.Shape{{1, 2, 5, 5}, {1, 2, int(n.OutH()), int(n.OutW())}} {
		x, err := b.Alloc(sh, bench.Float32)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Free(x) })
		ts = append(ts, x)
	}
	return n, ts[:1], ts[1:]
}

// TestFakeDeviceOpens: the backend opens on the simulated device as on a
// real one (name, compute capability, kernels compiled for sm_80), reports
// cuBLAS's absence only for the GEMM-based ops, and queues a node's kernel.
func TestFakeDeviceOpens(t *testing.T) {
	b, f := openFake(t)
	info := b.Info()
	if info.Device != "fake GPU" || info.Details["compute_capability"] != "8.0" || info.Details["l2_flush_mib"] != "64" {
		t.Errorf("info %+v", info)
	}
	if err := b.Supports("layernorm", bench.Float32); err != nil {
		t.Errorf("layernorm: %v", err)
	}
	node, in, out := layerNormOn(t, b)
	if err := b.Enqueue(node, in, out); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := f.launches(); len(got) != 1 || got[0] != "layernorm_f32" {
		t.Errorf("launches %v", got)
	}
}

// TestNVRTCMissingWithDriver: with a working driver and device but no
// NVRTC, the backend is unavailable with one line naming NVRTC and the
// device, every op is NS with that reason, and what was started on the
// device is released.
func TestNVRTCMissingWithDriver(t *testing.T) {
	noSystemLibs(t, t.TempDir())
	f := newFakeDevice()
	b := openWith(0, FP32, func() (*driver, error) { return f.driver(), nil })
	defer b.Close()
	info := b.Info()
	if info.Available || !strings.HasPrefix(info.Reason, "NVRTC not found:") || !strings.Contains(info.Reason, "fake GPU") ||
		strings.Contains(info.Reason, "\n") {
		t.Fatalf("available=%v reason %q", info.Available, info.Reason)
	}
	if err := b.Supports("layernorm", bench.Float32); err == nil || !strings.Contains(err.Error(), "NVRTC not found") {
		t.Errorf("Supports: %v, want the NVRTC reason", err)
	}
	if a, h := f.allocations(), f.liveHandles(); len(a) != 0 || len(h) != 0 {
		t.Errorf("the failed start left allocations %v and handles %v", a, h)
	}
}

// TestKernelCompileFailure: a kernel source NVRTC rejects fails the
// Enqueue of its op with NVRTC's error and log, again on the next try (a
// failed module is not remembered as loaded), while ops of other kernel
// files still run on the same backend.
func TestKernelCompileFailure(t *testing.T) {
	b, f := openFake(t)
	saved := kernelSource
	t.Cleanup(func() { kernelSource = saved })
	kernelSource = func(file string) (string, error) {
		if file == "norm.cu" {
			return `extern "C" __global__ void layernorm_f32(float* x) { x[0] = no_such_thing; }`, nil
		}
		return saved(file)
	}
	node, in, out := layerNormOn(t, b)
	for try := 1; try <= 2; try++ {
		err := b.Enqueue(node, in, out)
		wantAll(t, fmt.Sprintf("layernorm, try %d", try), err, "layernorm", "compiling kernel norm.cu for sm_80",
			"NVRTC_ERROR_COMPILATION", "no_such_thing")
		var ce *compileError
		if !errors.As(err, &ce) {
			t.Errorf("try %d: %v is not a compileError", try, err)
		}
	}
	pnode, pin, pout := avgPoolOn(t, b)
	if err := b.Enqueue(pnode, pin, pout); err != nil {
		t.Fatalf("avg_pool2d after the failed compile: %v", err)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := f.launches(); len(got) != 1 || got[0] != "avg_pool_f32" {
		t.Errorf("launches %v, want only avg_pool_f32", got)
	}
}

// TestOutOfDeviceMemory: an allocation beyond the device's memory fails
// with an error naming cuMemAlloc, CUDA_ERROR_OUT_OF_MEMORY and the bytes
// asked for; the allocator's current and peak bytes and the device's
// allocations are as before it; a smaller allocation then works, holds
// data and is freed.
func TestOutOfDeviceMemory(t *testing.T) {
	b, f := openFake(t)
	small, err := b.Alloc(bench.Shape{1000}, bench.Float32)
	if err != nil {
		t.Fatal(err)
	}
	f.set(func(f *fakeDevice) { f.total = f.inUse + 1<<20 })
	before, allocs := b.Memory(), f.allocations()
	_, err = b.Alloc(bench.Shape{512, 1024}, bench.Float32)
	wantAll(t, "2 MiB on a device with 1 MiB free", err, "cuMemAlloc_v2", "CUDA_ERROR_OUT_OF_MEMORY (2)", "out of memory",
		"2097152 bytes", "[512, 1024]")
	if after := b.Memory(); after != before {
		t.Errorf("memory %+v after the failed allocation, %+v before", after, before)
	}
	if got := f.allocations(); fmt.Sprint(got) != fmt.Sprint(allocs) {
		t.Errorf("device allocations %v after the failed allocation, %v before", got, allocs)
	}
	x, err := b.Alloc(bench.Shape{256, 1024}, bench.Float32)
	if err != nil {
		t.Fatalf("1 MiB after the failure: %v", err)
	}
	if m := b.Memory(); m.Current != before.Current+1<<20 || m.Peak != before.Peak+1<<20 {
		t.Errorf("memory %+v after 1 MiB more than %+v", m, before)
	}
	src := make([]float32, 256*1024)
	for i := range src {
		src[i] = float32(i)
	}
	got := make([]float32, len(src))
	if err := b.Upload(x, src); err != nil {
		t.Fatal(err)
	}
	if err := b.Download(x, got); err != nil {
		t.Fatal(err)
	}
	if got[12345] != 12345 || got[len(got)-1] != float32(len(got)-1) {
		t.Errorf("read back %v, %v", got[12345], got[len(got)-1])
	}
	b.Free(x)
	b.Free(small)
	if m := b.Memory(); m.Current != 0 {
		t.Errorf("%d bytes held after Free", m.Current)
	}
}

// TestFailingLaunch: a launch the driver refuses for a reason that leaves
// the context usable (too many resources) fails that node's Enqueue with
// an error naming the op, the kernel and the code, and the backend runs the
// next node; a kernel that faults while running (the launch succeeds) is
// the error of the next Sync, and since that fault is sticky, every later
// call fails with it at once, without reaching the device.
func TestFailingLaunch(t *testing.T) {
	b, f := openFake(t)
	node, in, out := layerNormOn(t, b)

	f.set(func(f *fakeDevice) { f.failKernel, f.failCode = "layernorm_f32", cudaErrorOutOfResources })
	wantAll(t, "refused launch", b.Enqueue(node, in, out), "layernorm", "layernorm_f32 (norm.cu)", "cuLaunchKernel",
		"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (701)")

	f.set(func(f *fakeDevice) { f.failKernel = "" })
	if err := b.Enqueue(node, in, out); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}

	f.set(func(f *fakeDevice) { f.failKernel, f.failCode, f.failAsync = "layernorm_f32", 0, true })
	if err := b.Enqueue(node, in, out); err != nil {
		t.Fatalf("a launch that faults later failed at once: %v", err)
	}
	wantAll(t, "fault while running", b.Sync(), "cuStreamSynchronize", "CUDA_ERROR_LAUNCH_FAILED (719)")

	f.set(func(f *fakeDevice) { f.failKernel = "" })
	before := len(f.launches())
	err := b.Enqueue(node, in, out)
	wantAll(t, "after the sticky fault", err, "context was lost", "CUDA_ERROR_LAUNCH_FAILED (719)")
	var lc *lostContext
	if !errors.As(err, &lc) {
		t.Errorf("error %v is not a lostContext", err)
	}
	wantAll(t, "Sync after the sticky fault", b.Sync(), "context was lost")
	if got := f.launches(); len(got) != before {
		t.Errorf("a lost context still launched %v", got[before:])
	}
}

// TestRunnerReportsDeviceFailuresPerCase runs whole cases through the
// runner on one simulated device, one failure after another: a refused
// launch and an out-of-memory allocation are FAIL rows of `check` carrying
// the driver's error (not input errors, not panics), a kernel fault is the
// error of a timing run, and after each the backend holds no memory and
// times the next case normally.
func TestRunnerReportsDeviceFailuresPerCase(t *testing.T) {
	b, f := openFake(t)
	lnDir := filepath.Join(fixtureRoot, "layernorm", "odd_b2_d147")
	pool, ok := cases.Lookup("avg_pool2d/ceil_odd")
	if !ok {
		t.Fatal("no case avg_pool2d/ceil_odd")
	}
	spec, err := pool.Spec(0)
	if err != nil {
		t.Fatal(err)
	}
	opt := runner.BenchOptions{Count: 3, Warmup: 1}
	held := func(after string) {
		t.Helper()
		if m := b.Memory(); m.Current != 0 {
			t.Errorf("after %s the backend holds %d bytes", after, m.Current)
		}
		if a := f.allocations(); len(a) != 1 { // the L2-flush buffer
			t.Errorf("after %s the device holds %v", after, a)
		}
	}
	checkRow := func(what string, want ...string) {
		t.Helper()
		row := runner.CheckFixture(b, lnDir, runner.CheckOptions{})
		if row.Status != runner.FAIL || row.Error || row.Case != "layernorm/odd_b2_d147" || row.Backend != "cuda" {
			t.Errorf("%s: row %+v, want a FAIL that is not an input error", what, row)
		}
		wantAll(t, what, errors.New(row.Reason), want...)
		if strings.Contains(row.Reason, "internal error") || strings.Contains(row.Reason, "panic") {
			t.Errorf("%s: %s", what, row.Reason)
		}
		held(what)
	}

	f.set(func(f *fakeDevice) { f.failKernel, f.failCode = "layernorm_f32", cudaErrorOutOfResources })
	checkRow("refused launch", "step 0 (layernorm)", "layernorm_f32", "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES")

	f.set(func(f *fakeDevice) { f.failKernel, f.failCode, f.total = "", 0, f.inUse+8<<10 })
	checkRow("out of memory", "cuMemAlloc_v2", "CUDA_ERROR_OUT_OF_MEMORY")

	f.set(func(f *fakeDevice) { f.total = 16 << 30 })
	row, err := runner.BenchRow(b, pool.Name, spec, pool.DType, 2, 1, opt)
	if err != nil {
		t.Fatalf("timing after the failures: %v", err)
	}
	if row.N != 3 || row.MedianNs != 1e5 || row.Backend != "cuda" {
		t.Errorf("row %+v, want 3 samples of the fake's 0.1 ms", row)
	}
	held("the timing")

	// A sticky fault while timing ends the context: that case and every
	// later one fail with it, without another launch.
	f.set(func(f *fakeDevice) { f.failKernel, f.failAsync = "avg_pool_f32", true })
	_, err = runner.BenchRow(b, pool.Name, spec, pool.DType, 2, 1, opt)
	wantAll(t, "fault while timing", err, "CUDA_ERROR_LAUNCH_FAILED")
	f.set(func(f *fakeDevice) { f.failKernel = "" })
	before := len(f.launches())
	checkRow("after the sticky fault", "context was lost", "CUDA_ERROR_LAUNCH_FAILED")
	_, err = runner.BenchRow(b, pool.Name, spec, pool.DType, 2, 1, opt)
	wantAll(t, "timing after the sticky fault", err, "context was lost")
	if got := f.launches(); len(got) != before {
		t.Errorf("a lost context still launched %v", got[before:])
	}
	held("the timing")
}
