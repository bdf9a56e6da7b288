package kern

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"testing"
)

// dataLine matches one 32-bit value of a generated constant table:
// DATA vk_name<>+offset(SB)/4, $0xbits.
var dataLine = regexp.MustCompile(`(?m)^DATA vk_(\w+)<>\+(\d+)\(SB\)/4, \$0x([0-9a-f]+)$`)

// TestGeneratedCoefficientsMatchGo: the polynomial coefficients the SIMD
// kernels read (the generator's tables in simd_amd64.s) are, bit for bit,
// the ones the Go paths evaluate (erfPieces and erfHead in gelu_generic.go,
// expCoef in softmax_generic.go). The generator is its own module and
// holds its own copy; the accuracy tests would miss a digit changed in one
// copy that moves the result by less than their bounds.
func TestGeneratedCoefficientsMatchGo(t *testing.T) {
	src, err := os.ReadFile("simd_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	tables := map[string]map[int]uint32{}
	for _, m := range dataLine.FindAllStringSubmatch(string(src), -1) {
		off, _ := strconv.Atoi(m[2])
		bits, _ := strconv.ParseUint(m[3], 16, 32)
		if tables[m[1]] == nil {
			tables[m[1]] = map[int]uint32{}
		}
		tables[m[1]][off/4] = uint32(bits)
	}
	check := func(name string, lane int, want float32) {
		t.Helper()
		got, ok := tables[name][lane]
		if !ok {
			t.Fatalf("simd_amd64.s has no vk_%s lane %d", name, lane)
		}
		if got != math.Float32bits(want) {
			t.Errorf("vk_%s lane %d = %g, Go path %g", name, lane, math.Float32frombits(got), want)
		}
	}
	for lane := range 16 {
		for j, row := range erfPieces {
			check(fmt.Sprintf("erft%d", j), lane, row[lane%8])
		}
		check("erfthead", lane, erfHead[lane%8])
		for i, c := range expCoef {
			check(fmt.Sprintf("expc%d", i), lane, c)
		}
	}
}
