package kern

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// legacySSE matches an instruction without the VEX or EVEX prefix (its
// mnemonic does not start with V) that names an X register: a legacy-SSE
// instruction. The generator's helpers are loadFloat and storeFloatResult.
var legacySSE = regexp.MustCompile(`^\s+([A-UW-Z][A-Z0-9]*)\s.*\bX([0-9]|1[0-5])\b`)

// TestGeneratedAssemblyHasNoLegacySSE: no generated kernel executes a
// legacy-SSE instruction. After a 256- or 512-bit instruction has left the
// upper register halves dirty, one costs about 130 ns per call on the AMD
// EPYC guests (docs/cpu-gemm-avx2.md), so every scalar is moved with the
// VEX encoding (asm/gen.go: loadFloat, storeFloatResult).
func TestGeneratedAssemblyHasNoLegacySSE(t *testing.T) {
	src, err := os.ReadFile("simd_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	fn := ""
	for i, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(line, "TEXT ") {
			fn = strings.Fields(line)[1]
		}
		if m := legacySSE.FindStringSubmatch(line); m != nil {
			t.Errorf("simd_amd64.s:%d (%s): legacy-SSE %s: %s", i+1, fn, m[1], strings.TrimSpace(line))
		}
	}
}
