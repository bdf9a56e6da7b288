//go:build purego || !amd64

package kern

func flashFor(ISA) *flashKernels { return nil }
