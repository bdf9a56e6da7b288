package cuda

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// cacheEnv overrides the directory compiled kernels are cached in; "off"
// disables the cache.
const cacheEnv = "VITBENCH_CUDA_CACHE"

// cacheMagic starts every cache file; the SHA-256 of the code follows it,
// then the code.
var cacheMagic = []byte("vitbench-cuda-cache 1\n")

// cacheDir returns the kernel cache directory ("" = no cache): the
// VITBENCH_CUDA_CACHE directory, else os.UserCacheDir()/vitbench/cuda.
func cacheDir() string {
	if d := os.Getenv(cacheEnv); d != "" {
		if d == "off" {
			return ""
		}
		return d
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "vitbench", "cuda")
}

// cacheKey identifies one compilation: the source's SHA-256, the NVRTC
// version, the target and the options. Any change gives another key.
func cacheKey(name, source, nvrtcVersion string, t target) string {
	h := sha256.New()
	fmt.Fprintf(h, "kernel %s\nnvrtc %s\ntarget %s\noptions %s\nsource %x\n",
		name, nvrtcVersion, t, strings.Join(compileOptions(t), " "), sha256.Sum256([]byte(source)))
	return hex.EncodeToString(h.Sum(nil))
}

// cachePath is where the code for key is stored in dir.
func cachePath(dir, name string, t target, key string) string {
	base := strings.TrimSuffix(filepath.Base(name), ".cu")
	return filepath.Join(dir, fmt.Sprintf("%s-%s-%s.bin", base, t, key[:24]))
}

// readCache returns the code stored at path if the file is whole: the
// magic, then a SHA-256 that matches the code after it. A missing,
// truncated or corrupted file is a miss.
func readCache(path string) ([]byte, bool) {
	raw, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(raw, cacheMagic) || len(raw) < len(cacheMagic)+sha256.Size+1 {
		return nil, false
	}
	sum := raw[len(cacheMagic) : len(cacheMagic)+sha256.Size]
	code := raw[len(cacheMagic)+sha256.Size:]
	if got := sha256.Sum256(code); !bytes.Equal(got[:], sum) {
		return nil, false
	}
	return code, true
}

// writeCache stores code at path atomically: a temporary file in the same
// directory, synced, then renamed over path, so a reader never sees half a
// file and concurrent writers leave one whole file.
func writeCache(path string, code []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	sum := sha256.Sum256(code)
	_, err = f.Write(append(append(append([]byte(nil), cacheMagic...), sum[:]...), code...))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// cacheIdentity is what the cache key records of the compiler: its version
// and the library's path (two NVRTCs of one version, such as the CUDA
// emulator's builds with and without sanitizers, never share entries).
func (n *nvrtc) cacheIdentity() string { return n.version() + " " + n.path }

// compileCached returns the code of kernel source name for t, from the
// cache when a whole entry exists, else compiled by NVRTC and stored. A
// cache that cannot be written is not an error: the code is still returned.
func compileCached(n *nvrtc, dir, name, source string, t target) (code []byte, hit bool, err error) {
	var path string
	if dir != "" {
		path = cachePath(dir, name, t, cacheKey(name, source, n.cacheIdentity(), t))
		if code, ok := readCache(path); ok {
			return code, true, nil
		}
	}
	code, err = n.compile(name, source, t)
	if err != nil {
		return nil, false, err
	}
	if path != "" {
		// Best effort: an unwritable cache only costs a recompilation.
		_ = writeCache(path, code)
	}
	return code, false, nil
}
