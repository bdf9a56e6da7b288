//go:build linux

package cuda

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ebitengine/purego"
)

// wheelEnv carries a wheelConfig (JSON) from TestWheelLayout to its
// subprocess, TestWheelHelper.
const wheelEnv = "VITBENCH_WHEEL_HELPER"

// namespaceMarker starts the helper's message when the mount namespace
// cannot hide the system's NVRTC.
const namespaceMarker = "wheel-namespace-unavailable:"

// wheelConfig is what the helper needs: the wheel-shaped tree, the copies
// in it, and the system files to hide behind an empty file.
type wheelConfig struct {
	VirtualEnv string   // the root whose lib/python3.*/site-packages/nvidia/*/lib holds the copies
	NVRTC      string   // the copy of libnvrtc, named by its SONAME
	Builtins   string   // the copy of libnvrtc-builtins, named by its SONAME
	Hide       []string // the system's libnvrtc* files (real paths)
	Empty      string   // an empty file bind-mounted over each of Hide
}

// TestWheelLayout: an NVRTC in the layout of NVIDIA's Python wheels
// (site-packages/nvidia/cuda_nvrtc/lib, a directory not on the loader's
// path) compiles kernels, because its builtins are loaded from its own
// directory. Copies of the system's NVRTC and builtins are put in such a
// tree, and a subprocess in a private mount namespace, where every system
// libnvrtc* reads as an empty file, loads NVRTC through the tree alone and
// compiles two real kernel files. Without the builtins preload every
// compile fails with NVRTC_ERROR_BUILTIN_OPERATION_FAILURE there.
func TestWheelLayout(t *testing.T) {
	n := requireNVRTC(t)
	nvrtcFile := systemNVRTCFile(t)
	builtins := builtinsPaths(filepath.Dir(nvrtcFile), n.major, n.minor)
	if len(builtins) == 0 {
		unavailable(t, "no libnvrtc-builtins beside "+nvrtcFile)
	}
	root := t.TempDir()
	venv := filepath.Join(root, "venv")
	lib := filepath.Join(venv, "lib/python3.12/site-packages/nvidia/cuda_nvrtc/lib")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := wheelConfig{VirtualEnv: venv, Empty: filepath.Join(root, "empty"),
		NVRTC: copyAsSONAME(t, nvrtcFile, lib), Builtins: copyAsSONAME(t, builtins[0], lib),
		Hide: systemNVRTCFiles(nvrtcFile)}
	if err := os.WriteFile(cfg.Empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runWheelHelper(t, cfg)
	if strings.Contains(out, namespaceMarker) {
		i := strings.Index(out, namespaceMarker)
		unavailable(t, oneLine(out[i:min(len(out), i+300)]))
	}
	if err != nil || !strings.Contains(out, "--- PASS: TestWheelHelper") {
		t.Fatalf("the helper in the mount namespace failed (%v):\n%s", err, out)
	}
	t.Logf("helper:\n%s", out)
}

// runWheelHelper runs TestWheelHelper in a copy of the test binary in a new
// mount namespace, with cfg and without the loader and library variables
// that could reach the system's NVRTC. It returns the combined output; a
// namespace that cannot be made (not root) reads as namespaceMarker.
func runWheelHelper(t *testing.T, cfg wheelConfig) (string, error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestWheelHelper$", "-test.v", "-test.count=1")
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "LD_LIBRARY_PATH", "LD_PRELOAD", libsEnv, "VIRTUAL_ENV", wheelEnv:
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, wheelEnv+"="+string(js))
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		return namespaceMarker + " cannot start a process in a new mount namespace: " + err.Error(), err
	}
	err = cmd.Wait()
	return buf.String(), err
}

// TestWheelHelper is TestWheelLayout's subprocess (it skips when run
// otherwise): it hides the system's libnvrtc* files, checks that the
// loader no longer finds NVRTC or its builtins by name, then loads NVRTC
// through the wheel tree only and compiles elementwise.cu and msdeform.cu.
func TestWheelHelper(t *testing.T) {
	js := os.Getenv(wheelEnv)
	if js == "" {
		t.Skip("run by TestWheelLayout in a mount namespace")
	}
	var cfg wheelConfig
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		t.Fatal(err)
	}
	for _, p := range cfg.Hide {
		if err := syscall.Mount(cfg.Empty, p, "", syscall.MS_BIND, ""); err != nil {
			t.Skipf("%s cannot bind-mount an empty file over %s: %v", namespaceMarker, p, err)
		}
	}
	for _, name := range []string{filepath.Base(cfg.NVRTC), filepath.Base(cfg.Builtins)} {
		if h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL); err == nil {
			purego.Dlclose(h)
			t.Fatalf("the loader still finds %s with %v hidden: the test could not tell a fix from none", name, cfg.Hide)
		}
	}
	wheelOnly(t, cfg.VirtualEnv)
	n, err := loadNVRTC()
	if err != nil {
		t.Fatal(err)
	}
	if n.path != cfg.NVRTC {
		t.Fatalf("loaded %s, want the wheel's %s", n.path, cfg.NVRTC)
	}
	compileInWheel(t, n)
	if n.builtins != cfg.Builtins {
		t.Errorf("builtins %q (%s), want %s", n.builtins, n.builtinsNote, cfg.Builtins)
	}
	if line := Libraries()[0]; !strings.Contains(line, "builtins "+cfg.Builtins) {
		t.Errorf("vitbench info's NVRTC line %q does not name the builtins", line)
	}
}

// wheelOnly makes the library search see only the NVIDIA wheel
// directories that defaultLocations finds under the virtual environment
// venv, and forgets libraries loaded so far, until the test ends.
func wheelOnly(t *testing.T, venv string) {
	t.Helper()
	t.Setenv("VIRTUAL_ENV", venv)
	var dirs []string
	for _, d := range defaultLocations() {
		if strings.HasPrefix(d, venv+"/") {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		t.Fatalf("defaultLocations finds no nvidia/*/lib under VIRTUAL_ENV=%s", venv)
	}
	noSystemLibs(t, "")
	searchLocations = func() []string { return dirs }
}

// compileInWheel compiles two kernel files for sm_80 with n.
func compileInWheel(t *testing.T, n *nvrtc) {
	t.Helper()
	tg, err := n.targetFor(80)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"elementwise.cu", "msdeform.cu"} {
		src, err := kernelSource(f)
		if err != nil {
			t.Fatal(err)
		}
		code, err := n.compile(f, src, tg)
		if err != nil {
			t.Fatalf("NVRTC %s from the wheel tree: %v", n.path, oneLine(err.Error()))
		}
		t.Logf("%s for %s: %d bytes with builtins %s", f, tg, len(code), n.builtins)
	}
}

// systemNVRTCFile returns the first NVRTC file (a path, not a bare name)
// the standard search lists, skipping the test when there is none.
func systemNVRTCFile(t *testing.T) string {
	t.Helper()
	for _, c := range candidatePaths(nvrtcNames) {
		if strings.Contains(c, "/") && fileExists(c) {
			return c
		}
	}
	unavailable(t, "no NVRTC file in the standard directories")
	return ""
}

// systemNVRTCFiles returns the real paths of every libnvrtc* file in the
// standard search directories, the LD_LIBRARY_PATH ones and nvrtcFile's
// own: what the loader could find NVRTC or its builtins by.
func systemNVRTCFiles(nvrtcFile string) []string {
	dirs := append(defaultLocations(), filepath.SplitList(os.Getenv("LD_LIBRARY_PATH"))...)
	dirs = append(dirs, filepath.Dir(nvrtcFile))
	if r, err := filepath.EvalSymlinks(nvrtcFile); err == nil {
		dirs = append(dirs, filepath.Dir(r))
	}
	var out []string
	seen := map[string]bool{}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		m, _ := filepath.Glob(filepath.Join(d, "libnvrtc*"))
		for _, p := range m {
			r, err := filepath.EvalSymlinks(p)
			if st, serr := os.Stat(r); err != nil || serr != nil || !st.Mode().IsRegular() || seen[r] {
				continue
			}
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// copyAsSONAME copies the shared library src into dir under its SONAME
// (a copy, not a link, so that the loader cannot reach the original
// through it) and returns the copy's path.
func copyAsSONAME(t *testing.T, src, dir string) string {
	t.Helper()
	f, err := elf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	names, err := f.DynString(elf.DT_SONAME)
	f.Close()
	if err != nil || len(names) != 1 {
		t.Fatalf("%s: no SONAME (%v)", src, err)
	}
	dst := filepath.Join(dir, names[0])
	copyFile(t, src, dst)
	return dst
}

// copyFile copies src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestNVRTCDriverCap: an NVRTC whose major version is newer than the
// driver's CUDA is passed over, with the reason in the one-line error;
// with a driver as new as NVRTC (or none) it is taken.
func TestNVRTCDriverCap(t *testing.T) {
	n := requireNVRTC(t)
	nvrtcFile := systemNVRTCFile(t)
	noSystemLibs(t, filepath.Dir(nvrtcFile))
	for _, c := range []struct {
		driver int32 // cuDriverGetVersion's answer; 0: no driver
		take   bool
	}{
		{(int32(n.major) - 1) * 1000, false},
		{int32(n.major)*1000 + int32(n.minor)*10, true},
		{(int32(n.major) + 1) * 1000, true},
		{0, true},
	} {
		withFakeDriverVersion(c.driver)
		got, err := loadNVRTC()
		switch {
		case c.take && err != nil:
			t.Errorf("driver %d: %v", c.driver, err)
		case c.take && got.major != n.major:
			t.Errorf("driver %d: took NVRTC %s", c.driver, got.version())
		case !c.take && err == nil:
			t.Errorf("driver %d: took NVRTC %s from %s", c.driver, got.version(), got.path)
		case !c.take:
			msg := err.Error()
			t.Logf("driver %d: %s", c.driver, msg)
			want := "is newer than the driver's CUDA " + formatDriverVersion(c.driver)
			if !strings.HasPrefix(msg, "NVRTC not found:") || !strings.Contains(msg, "passed over "+filepath.Dir(nvrtcFile)) ||
				!strings.Contains(msg, want) || strings.Contains(msg, "\n") {
				t.Errorf("driver %d: error %q, want one line passing over the NVRTC in %s because it %s",
					c.driver, msg, filepath.Dir(nvrtcFile), want)
			}
		}
	}
}

// withFakeDriverVersion makes loadDriver return a driver whose
// cuDriverGetVersion answers v (no driver when v is 0), and forgets the
// NVRTC loaded so far.
func withFakeDriverVersion(v int32) {
	resetLoaders()
	if v == 0 {
		driverOnce.Do(func() { driverErr = errors.New("NVIDIA driver not found: test") })
		return
	}
	d := &driver{path: "fake libcuda", cuDriverGetVersion: func(p *int32) cuResult { *p = v; return 0 }}
	driverOnce.Do(func() { driverLib = d })
}

// formatDriverVersion turns 12040 into "12.4".
func formatDriverVersion(v int32) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }

// TestSearchGoesOnAfterReject: a candidate that loads but is passed over
// is not taken; the next one is, and the error when none is taken names
// every candidate passed over.
func TestSearchGoesOnAfterReject(t *testing.T) {
	requireNVRTC(t)
	nvrtcFile := systemNVRTCFile(t)
	first, second := t.TempDir(), t.TempDir()
	for _, d := range []string{first, second} {
		if err := symlink(nvrtcFile, filepath.Join(d, "libnvrtc.so.11.2")); err != nil {
			t.Fatal(err)
		}
	}
	noSystemLibs(t, first+":"+second)
	rejectFirst := func(_ uintptr, path string) string {
		if strings.HasPrefix(path, first+"/") {
			return "test rejects it"
		}
		return ""
	}
	_, path, err := libSearch{what: "NVRTC", names: []string{"libnvrtc.so.11.2"}, reject: rejectFirst}.run()
	if err != nil || path != filepath.Join(second, "libnvrtc.so.11.2") {
		t.Errorf("took %q (%v), want the second directory's", path, err)
	}
	rejectAll := func(uintptr, string) string { return "test rejects it" }
	_, _, err = libSearch{what: "NVRTC", names: []string{"libnvrtc.so.11.2"}, reject: rejectAll}.run()
	if err == nil || !strings.Contains(err.Error(), "passed over "+filepath.Join(first, "libnvrtc.so.11.2")+": test rejects it, "+
		filepath.Join(second, "libnvrtc.so.11.2")+": test rejects it") {
		t.Errorf("error %v does not name both candidates passed over", err)
	}
}

// TestErrorNamesExistingFile: when no candidate loads, the error gives the
// loader's message for a candidate file that exists (a library missing a
// dependency, a file that is no library), with its path, and not the
// loader's miss of the first bare name.
func TestErrorNamesExistingFile(t *testing.T) {
	cases := map[string]func(t *testing.T, path string) string{
		"not an ELF file": func(t *testing.T, path string) string {
			if err := os.WriteFile(path, bytes.Repeat([]byte("not a library\n"), 64), 0o644); err != nil {
				t.Fatal(err)
			}
			return "invalid ELF header"
		},
		"missing dependency": func(t *testing.T, path string) string {
			return libraryMissingDependency(t, path)
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "libvitbench-test.so.12")
			want := setup(t, file)
			noSystemLibs(t, dir)
			searchLocations = func() []string { return []string{""} } // bare names: the loader misses them
			_, _, err := openLibrary("NVRTC", []string{"libvitbench-test.so.13", "libvitbench-test.so.12"})
			if err == nil {
				t.Fatal("loaded")
			}
			msg := err.Error()
			if !strings.Contains(msg, file+": ") || !strings.Contains(msg, want) ||
				strings.Contains(msg, "libvitbench-test.so.13: cannot open") || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line with %s's message (%s), not the bare name's miss", msg, file, want)
			}
		})
	}
}

// libraryMissingDependency writes to path a copy of the system's
// libnvrtc-builtins whose first DT_NEEDED entry names a library that does
// not exist (its last character replaced), so that dlopen finds the file
// and fails on the dependency; it returns the missing library's name.
func libraryMissingDependency(t *testing.T, path string) string {
	t.Helper()
	n := requireNVRTC(t)
	src := builtinsPaths(filepath.Dir(systemNVRTCFile(t)), n.major, n.minor)
	if len(src) == 0 {
		unavailable(t, "no libnvrtc-builtins file to copy")
	}
	copyFile(t, src[0], path)
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	needed, _ := f.ImportedLibraries()
	dynstr := f.Section(".dynstr")
	var data []byte
	if dynstr != nil {
		data, err = dynstr.Data()
	}
	f.Close()
	if len(needed) == 0 || err != nil || dynstr == nil {
		t.Fatalf("%s: no DT_NEEDED or .dynstr (%v)", src[0], err)
	}
	i := bytes.Index(data, append([]byte(needed[0]), 0))
	if i < 0 {
		t.Fatalf("%s: %s not in .dynstr", src[0], needed[0])
	}
	missing := needed[0][:len(needed[0])-1] + "Z"
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt([]byte(missing), int64(dynstr.Offset)+int64(i)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return missing
}

// TestDependencyPaths: the builtins and libcublasLt looked for beside
// NVRTC and cuBLAS, best first.
func TestDependencyPaths(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"libnvrtc-builtins.so.12.4", "libnvrtc-builtins.so.12.4.127", "libnvrtc-builtins.alt.so.12.4",
		"libcublasLt.so.11", "libcublasLt.so.12", "libcublasLt.so.12.4.5.8"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, filepath.Join(dir, n))
		}
		return out
	}
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"builtins of NVRTC 12.4", builtinsPaths(dir, 12, 4),
			in("libnvrtc-builtins.so.12.4", "libnvrtc-builtins.so.12.4.127", "libnvrtc-builtins.alt.so.12.4")},
		{"builtins of NVRTC 12.8", builtinsPaths(dir, 12, 8),
			in("libnvrtc-builtins.so.12.4.127", "libnvrtc-builtins.so.12.4", "libnvrtc-builtins.alt.so.12.4")},
		{"builtins of NVRTC 13.0", builtinsPaths(dir, 13, 0),
			in("libnvrtc-builtins.so.12.4.127", "libnvrtc-builtins.so.12.4", "libnvrtc-builtins.alt.so.12.4")},
		{"libcublasLt for libcublas.so.12", cublasLtPaths(filepath.Join(dir, "libcublas.so.12")),
			in("libcublasLt.so.12", "libcublasLt.so.12.4.5.8", "libcublasLt.so.11")},
		{"libcublasLt for libcublas.so", cublasLtPaths(filepath.Join(dir, "libcublas.so")),
			in("libcublasLt.so.12.4.5.8", "libcublasLt.so.12", "libcublasLt.so.11")},
		{"libcublasLt for a bare name", cublasLtPaths("libcublas.so.12"), nil},
	} {
		if strings.Join(c.got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
}
