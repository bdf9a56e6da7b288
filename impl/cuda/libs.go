package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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
// with the loader's message for a candidate file that exists but did not
// load, else for the first name.
func openLibrary(what string, names []string) (uintptr, string, error) {
	return libSearch{what: what, names: names}.run()
}

// libSearch is one library's search: the candidates of names (see
// candidatePaths), each opened with open and offered to reject.
type libSearch struct {
	what  string   // the library in messages: "NVRTC"
	names []string // file names, newest first
	// open dlopens one candidate; nil means dlopenGlobal. cuBLAS's loads
	// libcublasLt from the candidate's directory first.
	open func(path string) (uintptr, error)
	// reject returns why a candidate that loaded is passed over (it is
	// then closed and the search goes on), or "" to take it; nil takes
	// the first that loads. NVRTC's passes over versions the driver is
	// too old for.
	reject func(h uintptr, path string) string
}

// run tries the candidates in order and returns the handle and path of the
// first one taken, or the one-line "<what> not found: ..." error.
func (s libSearch) run() (uintptr, string, error) {
	open := s.open
	if open == nil {
		open = dlopenGlobal
	}
	var log searchLog
	for _, c := range candidatePaths(s.names) {
		if strings.Contains(c, "/") && !fileExists(c) {
			continue
		}
		h, err := open(c)
		if err != nil {
			log.failed(c, err)
			continue
		}
		if s.reject != nil {
			if why := s.reject(h, c); why != "" {
				purego.Dlclose(h)
				log.skipped = append(log.skipped, c+": "+why)
				continue
			}
		}
		return h, c, nil
	}
	return 0, "", fmt.Errorf("%s %w: no %s in %s, the loader's path, the CUDA directories or NVIDIA's Python wheels%s",
		s.what, errLibNotFound, strings.Join(s.names, ", "), libsEnv, log.detail())
}

// dlopenGlobal dlopens path with RTLD_NOW|RTLD_GLOBAL, so that what the
// library opens later by its SONAME finds it. The goroutine stays on its
// thread for the call: purego reads the loader's message (dlerror) in a
// second call after a failed dlopen, and the message is per thread; on
// another thread it would be whatever that thread's last dlopen said (a
// busy machine's loaded process moved one test's goroutine between the
// two and reported the previous candidate's miss instead of the file's
// missing dependency).
func dlopenGlobal(path string) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}

// searchLog gathers what a library search saw, for its error when no
// candidate is taken.
type searchLog struct {
	firstErr string   // the loader's message for the first candidate that failed
	fileErr  string   // the same for the first candidate file that exists
	skipped  []string // candidates that loaded but were passed over: "path: why"
}

// failed records that candidate c did not load. A file that exists and
// fails (a wheel's library missing a dependency, a broken copy) says more
// than a bare name the loader did not find, so its message is kept apart,
// prefixed with its path when the loader's message does not name it.
func (l *searchLog) failed(c string, err error) {
	msg := oneLine(err.Error())
	if l.firstErr == "" {
		l.firstErr = msg
	}
	if l.fileErr == "" && strings.Contains(c, "/") {
		if !strings.Contains(msg, c) {
			msg = c + ": " + msg
		}
		l.fileErr = msg
	}
}

// detail is the parenthesised end of the not-found error: the existing
// file's error (else the first one) and the candidates passed over, or "".
func (l *searchLog) detail() string {
	var parts []string
	switch {
	case l.fileErr != "":
		parts = append(parts, l.fileErr)
	case l.firstErr != "":
		parts = append(parts, l.firstErr)
	}
	if len(l.skipped) > 0 {
		parts = append(parts, "passed over "+strings.Join(l.skipped, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// preloadFromDir dlopens, with RTLD_NOW|RTLD_GLOBAL, the first of paths
// that loads, so that a library which later dlopens it by its SONAME (NVRTC
// its builtins, libcublas its libcublasLt) finds this copy even when its
// directory is not on the loader's path. It returns the handle and path
// loaded, or 0, "" and the first loader message ("" when paths is empty).
func preloadFromDir(paths []string) (uintptr, string, string) {
	firstErr := ""
	for _, p := range paths {
		h, err := dlopenGlobal(p)
		if err == nil {
			return h, p, ""
		}
		if firstErr == "" {
			firstErr = oneLine(err.Error())
		}
	}
	return 0, "", firstErr
}

// existingFirst returns the paths of exact that exist, then the matches of
// the patterns (each newest first), without repeats.
func existingFirst(exact []string, patterns ...string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range exact {
		if fileExists(p) {
			add(p)
		}
	}
	for _, pat := range patterns {
		for _, p := range globNewestFirst(pat) {
			add(p)
		}
	}
	return out
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
