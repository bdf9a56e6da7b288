package main

import (
	"fmt"
	"strings"

	"vitbench/bench"
	"vitbench/impl/cpu"
)

// openBackends opens the backends a -backend flag names ("all" = every
// registered one). Unavailable backends are returned too: their rows read NS.
func openBackends(spec string, threads int) ([]bench.Backend, error) {
	names := splitList(spec)
	if spec == "all" {
		names = allBackendNames()
	}
	if len(names) == 0 {
		return nil, usagef("-backend: no backend named")
	}
	var out []bench.Backend
	for _, n := range names {
		b, err := bench.OpenBackend(n, threads)
		if err != nil {
			closeAll(out)
			return nil, usageError{err}
		}
		out = append(out, b)
	}
	return out, nil
}

// allBackendNames is what "all" names: every registered backend but the
// CUDA emulator's (cuda-emu, cuda-emu-tf32, ...), which runs the CUDA
// kernels on the host, far slower than any real backend, to check them
// (docs/cuda-emulator.md): name those to use them.
func allBackendNames() []string {
	var out []string
	for _, n := range bench.BackendNames() {
		if !strings.HasPrefix(n, "cuda-emu") {
			out = append(out, n)
		}
	}
	return out
}

func closeAll(bs []bench.Backend) {
	for _, b := range bs {
		b.Close()
	}
}

// applyISA forces the CPU kernels onto a path when -isa is given.
func applyISA(isa string) error {
	if isa == "" {
		return nil
	}
	if err := cpu.SetISA(isa); err != nil {
		return usagef("-isa: %v", err)
	}
	return nil
}

// threadsOf returns the thread count a backend reports, or the fallback.
func threadsOf(b bench.Backend, fallback int) int {
	if v, ok := b.Info().Details["threads"]; ok {
		var n int
		if _, err := fmt.Sscan(v, &n); err == nil {
			return n
		}
	}
	return fallback
}
