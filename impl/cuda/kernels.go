package cuda

import (
	"embed"
	"io/fs"
	"sort"
	"strings"
)

// kernelFS holds the CUDA C++ sources, compiled by NVRTC at first use.
//
//go:embed kernels/*.cu kernels/common.cuh
var kernelFS embed.FS

// kernelFiles lists the embedded .cu files, sorted.
func kernelFiles() []string {
	entries, _ := fs.ReadDir(kernelFS, "kernels")
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".cu") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// kernelSource returns the full source NVRTC compiles for file. Tests
// replace it to simulate a kernel that fails to compile.
var kernelSource = embeddedSource

// embeddedSource returns the embedded source of file as NVRTC compiles it:
// the shared prelude common.cuh, then the file.
func embeddedSource(file string) (string, error) {
	common, err := kernelFS.ReadFile("kernels/common.cuh")
	if err != nil {
		return "", err
	}
	body, err := kernelFS.ReadFile("kernels/" + file)
	if err != nil {
		return "", err
	}
	return string(common) + "\n#line 1 \"" + file + "\"\n" + string(body), nil
}
