//go:build !purego

package kern

func sgemmNTSIMD(ISA) sgemmNTFunc { return nil }
