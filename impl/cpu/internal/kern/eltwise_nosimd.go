//go:build purego || !amd64

package kern

func eltwiseFor(ISA) *eltwiseKernels { return nil }
