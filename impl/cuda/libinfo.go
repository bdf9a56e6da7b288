package cuda

import "fmt"

// Libraries describes, one line each, the NVRTC and cuBLAS this machine
// would use (or why none), whether or not a driver and GPU are present:
// `vitbench info` prints it so that a GPU-less CI machine shows the NVRTC
// that compiles the kernels.
func Libraries() []string {
	var out []string
	if n, err := loadNVRTC(); err != nil {
		out = append(out, oneLine(err.Error()))
	} else {
		archs := "architectures not listed"
		if len(n.archs) > 0 {
			archs = fmt.Sprintf("sm_%d..sm_%d", n.archs[0], n.archs[len(n.archs)-1])
		}
		cubin := "CUBIN and PTX"
		if n.nvrtcGetCUBIN == nil {
			cubin = "PTX only"
		}
		out = append(out, fmt.Sprintf("NVRTC %s (%s; %s; %s; %s)", n.version(), n.path, n.builtinsLine(), archs, cubin))
	}
	if c, err := loadCuBLAS(); err != nil {
		out = append(out, oneLine(err.Error()))
	} else {
		lt := "libcublasLt from the loader's search"
		if c.lt != "" {
			lt = "libcublasLt " + c.lt
		}
		out = append(out, "cuBLAS "+c.path+" ("+lt+"; version read once a device is open)")
	}
	return out
}

// builtinsLine says where NVRTC's builtins come from: the file loaded from
// NVRTC's directory, or the note on why the loader's search provides them.
func (n *nvrtc) builtinsLine() string {
	if n.builtins != "" {
		return "builtins " + n.builtins
	}
	if n.builtinsNote != "" {
		return n.builtinsNote
	}
	return "builtins not loaded"
}
