//go:build purego || !amd64

package peak

func simdKernel(ISA) (fmaKernel, bool) { return fmaKernel{}, false }
