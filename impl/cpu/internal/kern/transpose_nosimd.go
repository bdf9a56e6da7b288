//go:build purego || !amd64

package kern

func transposeFor(ISA) transposeKernel { return nil }
