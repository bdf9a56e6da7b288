//go:build !purego

package kern

import (
	"debug/elf"
	"debug/gosym"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDPBF16Twin runs VDPBF16PS (dpbf16AVX512) against its Go twin dpbf16
// on accumulators and bf16 pairs chosen to tell the roundings apart: sums
// that round, products and sums below float32's normal range, subnormal
// accumulators and inputs, Inf and NaN; bit for bit (NaNs as NaN).
func TestDPBF16Twin(t *testing.T) {
	if !HasBF16() {
		t.Skip("no AVX512_BF16 here")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	mismatches := 0
	for it := range 20000 {
		var acc, a, b, want [16]uint32
		e0 := []int{127, 64, 60, 127}[it%4]
		for l := range 16 {
			a[l], b[l] = bf16Pair(rng, e0), bf16Pair(rng, e0)
			if it%4 == 3 {
				// Products near 1 and of opposite exponents: sums that cancel.
				b[l] = bf16Pair(rng, 254-e0)
			}
			switch rng.IntN(6) {
			case 0:
				acc[l] = uint32(rng.IntN(1<<23)) | uint32(rng.IntN(2))<<31 // subnormal
			case 1:
				acc[l] = uint32(rng.IntN(2))<<31 | uint32(1+rng.IntN(3))<<23 | uint32(rng.IntN(1<<23)) // near 2⁻¹²⁶
			default:
				e := min(max(2*e0-127+rng.IntN(40)-20, 1), 254)
				acc[l] = uint32(rng.IntN(2))<<31 | uint32(e)<<23 | uint32(rng.IntN(1<<23))
			}
			want[l] = math.Float32bits(dpbf16(math.Float32frombits(acc[l]), a[l], b[l]))
		}
		in := acc
		dpbf16AVX512(&acc[0], &a[0], &b[0])
		for l := range 16 {
			if !sameFloat(math.Float32frombits(acc[l]), math.Float32frombits(want[l])) {
				if mismatches++; mismatches <= 10 {
					t.Errorf("acc %#08x a %#08x b %#08x: VDPBF16PS %#08x, twin %#08x", in[l], a[l], b[l], acc[l], want[l])
				}
			}
		}
	}
	if mismatches > 0 {
		t.Fatalf("%d lanes of 320000 differ", mismatches)
	}
}

// TestVDPBF16PSEncoding disassembles this test binary with GNU objdump
// (Go's objdump does not decode EVEX) and checks that the bytes the
// generator writes for VDPBF16PS are that instruction with the intended
// registers (and VCVTNE2PS2BF16's, zmm2 = bf16(zmm1):bf16(zmm0)): in the
// probe, zmm0 += zmm1·zmm2; in the 12×32 microkernel,
// each accumulator zmm0–zmm23 += the broadcast pair (zmm26) · the B
// vector of its column half (zmm24, zmm25), in both loops.
func TestVDPBF16PSEncoding(t *testing.T) {
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Skip("GNU objdump (binutils) is not installed")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary is stripped of its ELF symbols; the Go function
	// table (.gopclntab) still says where each function starts and ends.
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pcln, text := f.Section(".gopclntab"), f.Section(".text")
	if pcln == nil || text == nil {
		t.Fatal("no .gopclntab or .text in the test binary")
	}
	data, err := pcln.Data()
	if err != nil {
		t.Fatal(err)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
	if err != nil {
		t.Fatal(err)
	}
	dis := func(sym, mnemonic string) []string {
		var fn *gosym.Func
		for _, name := range []string{sym + ".abi0", sym} {
			if fn = tab.LookupFunc("vitbench/impl/cpu/internal/kern." + name); fn != nil {
				break
			}
		}
		if fn == nil {
			t.Fatalf("%s is not in the function table", sym)
		}
		out, err := exec.Command(objdump, "-d", "--no-show-raw-insn", fmt.Sprintf("--start-address=%#x", fn.Entry),
			fmt.Sprintf("--stop-address=%#x", fn.End), exe).CombinedOutput()
		if err != nil {
			t.Fatalf("objdump: %v\n%s", err, out)
		}
		var ops []string
		for _, line := range strings.Split(string(out), "\n") {
			if i := strings.Index(line, mnemonic); i >= 0 {
				ops = append(ops, strings.TrimSpace(line[i+len(mnemonic):]))
			}
		}
		return ops
	}
	if got := dis("dpbf16AVX512", "vdpbf16ps"); len(got) != 1 || got[0] != "%zmm2,%zmm1,%zmm0" {
		t.Errorf("dpbf16AVX512 disassembles to vdpbf16ps %q, want one %%zmm2,%%zmm1,%%zmm0", got)
	}
	if got := dis("cvtBF16AVX512", "vcvtne2ps2bf16"); len(got) != 1 || got[0] != "%zmm0,%zmm1,%zmm2" {
		t.Errorf("cvtBF16AVX512 disassembles to vcvtne2ps2bf16 %q, want one %%zmm0,%%zmm1,%%zmm2", got)
	}
	ops := dis("gemmBF16x12AVX512", "vdpbf16ps")
	if len(ops) != 2*24 {
		t.Fatalf("gemmBF16x12AVX512 has %d vdpbf16ps, want 48 (24 per loop): %q", len(ops), ops)
	}
	re := regexp.MustCompile(`^%zmm(\d+),%zmm(\d+),%zmm(\d+)$`)
	seen := map[int]int{}
	for _, op := range ops {
		m := re.FindStringSubmatch(op)
		if m == nil {
			t.Fatalf("unexpected operands %q", op)
		}
		src2, _ := strconv.Atoi(m[1]) // AT&T order: src2, src1, dst
		src1, _ := strconv.Atoi(m[2])
		dst, _ := strconv.Atoi(m[3])
		if dst > 23 || src1 != 26 || src2 != 24+dst%2 {
			t.Errorf("vdpbf16ps %s: want zmm%d += zmm26·zmm%d", op, dst, 24+dst%2)
		}
		seen[dst]++
	}
	for d := range 24 {
		if seen[d] != 2 {
			t.Errorf("accumulator zmm%d is the destination of %d vdpbf16ps, want 2", d, seen[d])
		}
	}
}

// TestCvtBF16Twin compares VCVTNE2PS2BF16 (cvtBF16AVX512) with its Go
// twin RoundBF16 on random bit patterns (NaNs, infinities, subnormals and
// ties among them), bit for bit.
func TestCvtBF16Twin(t *testing.T) {
	if !HasBF16() {
		t.Skip("no AVX512_BF16 here")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	src := make([]float32, 32*64)
	for i := range src {
		b := rng.Uint32()
		switch i % 8 {
		case 1:
			b &= 0x807fffff // subnormal
		case 2:
			b = b&0xffff0000 | 0x8000 // a tie
		case 3:
			b |= 0x7f800000 // Inf or NaN
		}
		src[i] = math.Float32frombits(b)
	}
	got := make([]uint32, len(src)/2)
	cvtBF16AVX512(len(src)/32, &src[0], &got[0])
	for p, g := range got {
		if want := uint32(RoundBF16(src[2*p])) | uint32(RoundBF16(src[2*p+1]))<<16; g != want {
			t.Fatalf("src %#08x %#08x: VCVTNE2PS2BF16 %#08x, RoundBF16 %#08x", math.Float32bits(src[2*p]), math.Float32bits(src[2*p+1]), g, want)
		}
	}
}
