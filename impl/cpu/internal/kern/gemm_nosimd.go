//go:build purego || !amd64

package kern

func microKernelFor(ISA) (microKernel, bool) { return microKernel{}, false }

func tapsKernelFor(ISA) (tapsKernel, bool) { return tapsKernel{}, false }
