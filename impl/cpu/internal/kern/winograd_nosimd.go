//go:build purego || !amd64

package kern

func winogradFor(ISA) *winogradKernels { return nil }
