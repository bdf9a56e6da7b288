package cuda

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestCacheKey: the key changes with the source, the target and the NVRTC
// version, and only with them.
func TestCacheKey(t *testing.T) {
	base := cacheKey("k.cu", "src", "11.8", target{Arch: 90, CUBIN: true})
	if again := cacheKey("k.cu", "src", "11.8", target{Arch: 90, CUBIN: true}); again != base {
		t.Fatal("the key is not deterministic")
	}
	for name, k := range map[string]string{
		"source":  cacheKey("k.cu", "src ", "11.8", target{Arch: 90, CUBIN: true}),
		"arch":    cacheKey("k.cu", "src", "11.8", target{Arch: 80, CUBIN: true}),
		"format":  cacheKey("k.cu", "src", "11.8", target{Arch: 90}),
		"version": cacheKey("k.cu", "src", "12.4", target{Arch: 90, CUBIN: true}),
		"file":    cacheKey("j.cu", "src", "11.8", target{Arch: 90, CUBIN: true}),
	} {
		if k == base {
			t.Errorf("changing the %s keeps the key", name)
		}
	}
}

// TestCacheDir: VITBENCH_CUDA_CACHE overrides the directory, "off"
// disables the cache, and the default is under the user cache directory.
func TestCacheDir(t *testing.T) {
	t.Setenv(cacheEnv, "/x/y")
	if d := cacheDir(); d != "/x/y" {
		t.Errorf("override: %q", d)
	}
	t.Setenv(cacheEnv, "off")
	if d := cacheDir(); d != "" {
		t.Errorf("off: %q", d)
	}
	t.Setenv(cacheEnv, "")
	t.Setenv("XDG_CACHE_HOME", "/cache")
	if d := cacheDir(); d != "/cache/vitbench/cuda" {
		t.Errorf("default: %q", d)
	}
}

// TestCacheFileIntegrity: a whole file reads back; a truncated or
// corrupted one is a miss, never trusted.
func TestCacheFileIntegrity(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/k.bin"
	code := []byte("\x7fELF some machine code")
	if err := writeCache(path, code); err != nil {
		t.Fatal(err)
	}
	if got, ok := readCache(path); !ok || string(got) != string(code) {
		t.Fatalf("read back %q, %v", got, ok)
	}
	raw, _ := os.ReadFile(path)
	for name, bad := range map[string][]byte{
		"truncated": raw[:len(raw)-3],
		"flipped":   append(append([]byte(nil), raw[:len(raw)-1]...), raw[len(raw)-1]^1),
		"no magic":  append([]byte("x"), raw[1:]...),
		"empty":     nil,
	} {
		os.WriteFile(path, bad, 0o644)
		if _, ok := readCache(path); ok {
			t.Errorf("%s file trusted", name)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

// TestCompileCachedRecompilesCorruptEntry compiles a kernel through the
// cache: a miss compiles and stores, a hit reads back the same code, and a
// corrupted entry is recompiled and rewritten.
func TestCompileCachedRecompilesCorruptEntry(t *testing.T) {
	n := requireNVRTC(t)
	dir := t.TempDir()
	src, err := kernelSource("elementwise.cu")
	if err != nil {
		t.Fatal(err)
	}
	tg := target{Arch: 80, CUBIN: n.nvrtcGetCUBIN != nil}
	first, hit, err := compileCached(n, dir, "elementwise.cu", src, tg)
	if err != nil || hit {
		t.Fatalf("first compile: hit=%v err=%v", hit, err)
	}
	second, hit, err := compileCached(n, dir, "elementwise.cu", src, tg)
	if err != nil || !hit || string(second) != string(first) {
		t.Fatalf("second compile: hit=%v err=%v same=%v", hit, err, string(second) == string(first))
	}
	path := cachePath(dir, "elementwise.cu", tg, cacheKey("elementwise.cu", src, n.cacheIdentity(), tg))
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 0xff
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	third, hit, err := compileCached(n, dir, "elementwise.cu", src, tg)
	if err != nil || hit || string(third) != string(first) {
		t.Fatalf("after corruption: hit=%v err=%v same=%v", hit, err, string(third) == string(first))
	}
	if _, ok := readCache(path); !ok {
		t.Error("the corrupted entry was not rewritten whole")
	}
}

// TestCompileErrorNamesKernelAndLog: a source NVRTC rejects gives an error
// naming the kernel and carrying NVRTC's log.
func TestCompileErrorNamesKernelAndLog(t *testing.T) {
	n := requireNVRTC(t)
	_, err := n.compile("broken.cu", `extern "C" __global__ void k(float* x) { x[0] = undefined_thing; }`, target{Arch: 80})
	var ce *compileError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a compileError", err)
	}
	msg := err.Error()
	for _, want := range []string{"broken.cu", "compute_80", "NVRTC_ERROR_COMPILATION", "undefined_thing"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
}
