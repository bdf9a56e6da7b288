//go:build !purego

package peak

import "golang.org/x/sys/cpu"

// supportedISAs checks the CPU and the OS (x/sys/cpu checks the OS saves
// the wider registers).
func supportedISAs() []ISA {
	var out []ISA
	if cpu.X86.HasAVX512F {
		out = append(out, ISAAVX512)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		out = append(out, ISAAVX2)
	}
	return append(out, ISAGo)
}
