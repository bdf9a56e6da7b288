//go:build !purego

package kern

import "golang.org/x/sys/cpu"

// detectISA picks the widest path whose instructions the CPU and OS support
// (x/sys/cpu checks the OS saves the wider registers).
func detectISA() ISA { return supportedISAs()[0] }

func supportedISAs() []ISA {
	var out []ISA
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL {
		out = append(out, ISAAVX512)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		out = append(out, ISAAVX2)
	}
	return append(out, ISAGo)
}
