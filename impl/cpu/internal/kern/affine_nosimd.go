//go:build purego || !amd64

package kern

func affineFor(ISA) *affineKernels { return nil }
