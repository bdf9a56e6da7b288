//go:build purego || !amd64

package kern

func gatherFor(ISA) weightedRowsKernel { return nil }

func gatherHeadsFor(ISA, int) weightedRowsHeadsKernel { return nil }
