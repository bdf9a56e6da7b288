//go:build purego || !amd64

package kern

func sgemmNTSIMD(ISA) sgemmNTFunc { return nil }
