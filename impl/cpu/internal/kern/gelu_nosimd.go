//go:build purego || !amd64

package kern

func geluFor(ISA) *geluKernels { return nil }
