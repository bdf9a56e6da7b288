//go:build purego || !amd64

package kern

func softmaxFor(ISA) *softmaxKernels { return nil }
