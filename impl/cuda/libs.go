package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ebitengine/purego"
)

// libsEnv names the colon-separated list of directories searched first for
// every CUDA library.
const libsEnv = "VITBENCH_CUDA_LIBS"

// The library names tried, newest first.
var (
	driverNames = []string{"libcuda.so.1", "libcuda.so"}
	nvrtcNames  = []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}
	cublasNames = []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"}
)

// searchLocations returns the places a library is looked for after the
// VITBENCH_CUDA_LIBS directories: "" stands for the dynamic loader's own
// search (LD_LIBRARY_PATH, the ld.so cache), anything else is a directory.
// Tests replace it to simulate a machine without CUDA.
var searchLocations = defaultLocations

// defaultLocations is the loader's search, then the usual CUDA install
// directories (newest toolkit first), Debian's multiarch and NVIDIA driver
// directories (a container's /usr/local/nvidia included), and the lib
// directories of NVIDIA's Python wheels (site-packages/nvidia/*/lib, which
// also matches CUDA 13's nvidia/cu13/lib) in the active virtual
// environment, in the prefix of the first python3 on PATH, system-wide and
// under ~/.local.
func defaultLocations() []string {
	locs := []string{"", "/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"}
	locs = append(locs, globNewestFirst("/usr/local/cuda-*/lib64")...)
	locs = append(locs, "/usr/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu/nvidia/current",
		"/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/usr/lib64", "/usr/lib/wsl/lib")
	var roots []string
	for _, prefix := range pythonPrefixes() {
		roots = append(roots, globNewestFirst(filepath.Join(prefix, "lib/python3*/site-packages"))...)
	}
	if home, err := os.UserHomeDir(); err == nil {
		roots = append(roots, globNewestFirst(filepath.Join(home, ".local/lib/python3*/site-packages"))...)
	}
	roots = append(roots, "/usr/lib/python3/dist-packages")
	roots = append(roots, globNewestFirst("/usr/local/lib/python3*/dist-packages")...)
	roots = append(roots, globNewestFirst("/usr/local/lib/python3*/site-packages")...)
	roots = append(roots, globNewestFirst("/usr/lib/python3*/site-packages")...)
	for _, r := range roots {
		locs = append(locs, globNewestFirst(filepath.Join(r, "nvidia/*/lib"))...)
	}
	return locs
}

// pythonPrefixes returns the installation prefixes of the active virtual
// environment ($VIRTUAL_ENV) and of the first python3 on PATH (the folder
// above its bin/), where pip puts NVIDIA's wheels; python3 is not run.
func pythonPrefixes() []string {
	var out []string
	if v := os.Getenv("VIRTUAL_ENV"); v != "" {
		out = append(out, v)
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" || !fileExists(filepath.Join(dir, "python3")) {
			continue
		}
		prefix := filepath.Dir(dir)
		if len(out) == 0 || out[0] != prefix {
			out = append(out, prefix)
		}
		break
	}
	return out
}

// globNewestFirst returns the matches of pattern in reverse lexical order,
// so that cuda-12.4 comes before cuda-11.8.
func globNewestFirst(pattern string) []string {
	m, _ := filepath.Glob(pattern)
	sort.Sort(sort.Reverse(sort.StringSlice(m)))
	return m
}

// candidatePaths lists what dlopen is given for names, in order: for each
// name (newest first), every VITBENCH_CUDA_LIBS directory, then every
// search location.
func candidatePaths(names []string) []string {
	var dirs []string
	for _, d := range filepath.SplitList(os.Getenv(libsEnv)) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	dirs = append(dirs, searchLocations()...)
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		for _, d := range dirs {
			p := n
			if d != "" {
				p = filepath.Join(d, n)
			}
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// errLibNotFound is wrapped by every "library not found" error.
var errLibNotFound = errors.New("not found")

// openLibrary dlopens the first candidate for names that loads and returns
// its handle and path. The error names what was looked for in one line,
// with the loader's message for the first name when it had one.
func openLibrary(what string, names []string) (uintptr, string, error) {
	var firstErr string
	for _, c := range candidatePaths(names) {
		if !strings.Contains(c, "/") || fileExists(c) {
			h, err := purego.Dlopen(c, purego.RTLD_NOW|purego.RTLD_GLOBAL)
			if err == nil {
				return h, c, nil
			}
			if firstErr == "" {
				firstErr = err.Error()
			}
		}
	}
	detail := ""
	if firstErr != "" {
		detail = " (" + oneLine(firstErr) + ")"
	}
	return 0, "", fmt.Errorf("%s %w: no %s in %s, the loader's path, the CUDA directories or NVIDIA's Python wheels%s",
		what, errLibNotFound, strings.Join(names, ", "), libsEnv, detail)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// oneLine joins the lines of s with "; ".
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ; ")), " ")
}

// symbol is one entry point to bind: ptr is a pointer to a func variable.
type symbol struct {
	ptr  any
	name string
}

// bindAll resolves every symbol in lib (handle h) or returns an error
// naming the first one missing. It never panics.
func bindAll(lib string, h uintptr, syms []symbol) error {
	for _, s := range syms {
		if !bindOptional(h, s) {
			return fmt.Errorf("%s lacks %s", lib, s.name)
		}
	}
	return nil
}

// bindOptional binds s when h has it and reports whether it did.
func bindOptional(h uintptr, s symbol) bool {
	addr, err := purego.Dlsym(h, s.name)
	if err != nil || addr == 0 {
		return false
	}
	purego.RegisterFunc(s.ptr, addr)
	return true
}
