//go:build purego || !amd64

package peak

func supportedISAs() []ISA { return []ISA{ISAGo} }
