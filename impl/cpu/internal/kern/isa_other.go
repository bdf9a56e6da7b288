//go:build purego || !amd64

package kern

func detectISA() ISA       { return ISAGo }
func supportedISAs() []ISA { return []ISA{ISAGo} }
