package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/ebitengine/purego"
)

// driverNames are the libcuda names tried in order; VITBENCH_CUDA_LIBS
// (a colon-separated list of directories) is searched first.
var driverNames = []string{"libcuda.so.1", "libcuda.so"}

// driver holds the resolved driver entry points.
type driver struct {
	cuInit             func(flags uint32) int32
	cuDriverGetVersion func(version *int32) int32
	cuDeviceGetCount   func(count *int32) int32
	cuDeviceGet        func(dev *int32, ordinal int32) int32
	cuDeviceGetName    func(name *byte, length int32, dev int32) int32
	cuGetErrorName     func(code int32, str **byte) int32
}

var (
	loadOnce  sync.Once
	loaded    *driver
	loadError error
)

// openLibrary tries each candidate path and returns the first handle.
func openLibrary(names []string) (uintptr, string, error) {
	var tried []string
	var candidates []string
	for _, dir := range filepath.SplitList(os.Getenv("VITBENCH_CUDA_LIBS")) {
		if dir != "" {
			for _, n := range names {
				candidates = append(candidates, filepath.Join(dir, n))
			}
		}
	}
	candidates = append(candidates, names...)
	for _, c := range candidates {
		h, err := purego.Dlopen(c, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err == nil {
			return h, c, nil
		}
		tried = append(tried, err.Error())
	}
	// The first failure names the library every driver install provides;
	// the others add nothing a reader needs.
	return 0, "", errors.New(tried[len(tried)-len(names)])
}

// loadDriver opens libcuda once and binds the entry points this package uses.
func loadDriver() (*driver, error) {
	loadOnce.Do(func() {
		h, _, err := openLibrary(driverNames)
		if err != nil {
			loadError = fmt.Errorf("no NVIDIA driver: %v", err)
			return
		}
		d := &driver{}
		for _, f := range []struct {
			ptr  any
			name string
		}{
			{&d.cuInit, "cuInit"}, {&d.cuDriverGetVersion, "cuDriverGetVersion"},
			{&d.cuDeviceGetCount, "cuDeviceGetCount"}, {&d.cuDeviceGet, "cuDeviceGet"},
			{&d.cuDeviceGetName, "cuDeviceGetName"}, {&d.cuGetErrorName, "cuGetErrorName"},
		} {
			sym, err := purego.Dlsym(h, f.name)
			if err != nil {
				loadError = fmt.Errorf("libcuda lacks %s: %v", f.name, err)
				return
			}
			purego.RegisterFunc(f.ptr, sym)
		}
		loaded = d
	})
	return loaded, loadError
}

// check turns a CUresult into an error carrying the driver's name for it.
func (d *driver) check(call string, code int32) error {
	if code == 0 {
		return nil
	}
	var p *byte
	name := "unknown error"
	if d.cuGetErrorName(code, &p) == 0 && p != nil {
		name = cString(p)
	}
	return fmt.Errorf("%s: %s (%d)", call, name, code)
}

// cString copies a NUL-terminated C string owned by the driver.
func cString(p *byte) string {
	var b []byte
	for q := p; *q != 0; q = addByte(q, 1) {
		b = append(b, *q)
		if len(b) > 4096 {
			break
		}
	}
	return string(b)
}
