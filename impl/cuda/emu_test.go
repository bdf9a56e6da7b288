package cuda

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"vitbench/bench"
	"vitbench/bench/results"
	"vitbench/bench/runner"
)

// requireEmulator opens the emulator backend with math m, or skips the
// test when it cannot be built (no g++), except under CI, where the
// emulator is what proves the kernels and must be there.
func requireEmulator(t *testing.T, m Math) *Backend {
	t.Helper()
	if _, err := exec.LookPath("g++"); err != nil && os.Getenv(emuCXXEnv) == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but g++ is missing, so the CUDA emulator cannot be built: %v", err)
		}
		t.Skipf("no g++ for the CUDA emulator: %v", err)
	}
	b := OpenEmulator(m)
	if !b.Info().Available {
		t.Fatalf("%s unavailable: %s", b.Name(), b.Info().Reason)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

// TestEmulatorRunsTheBackend: the unchanged backend opens on the emulator
// (its probe kernel ran), computes a GEMM with bias and exact GELU through
// the emulated cuBLAS and the epilogue kernel, and frees what it took.
func TestEmulatorRunsTheBackend(t *testing.T) {
	b := requireEmulator(t, FP32)
	if d := b.Info().Details; d["compute_capability"] != "9.0" || d["kernels"] != "sm_90" || !strings.Contains(b.Info().Device, "emulator") {
		t.Errorf("info %+v", b.Info())
	}
	testDeviceGemm(t, b)
}

// checkWith runs the fixture dirs (under fixtures/) on a fresh emulator
// backend with kernel file's source edited by edit, and returns the rows.
// It fails the test when edit does not change the source.
func checkWith(t *testing.T, file string, edit func(string) string, dirs ...string) []results.CheckRow {
	t.Helper()
	saved := kernelSource
	t.Cleanup(func() { kernelSource = saved })
	kernelSource = func(f string) (string, error) {
		src, err := saved(f)
		if err != nil || f != file {
			return src, err
		}
		mutated := edit(src)
		if mutated == src {
			t.Fatalf("the edit of %s changed nothing", file)
		}
		return mutated, nil
	}
	b := requireEmulator(t, FP32)
	var rows []results.CheckRow
	for _, d := range dirs {
		rows = append(rows, runner.CheckFixture(b, filepath.Join(fixtureRoot, d), runner.CheckOptions{}))
	}
	// The emulated device, like a real one, has one primary context per
	// process: a fault ends it for every backend on it until the last one
	// closes.
	if err := b.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	return rows
}

// TestEmulatorCatchesBrokenKernels: kernels broken the ways real kernels
// break fail the committed fixtures on the emulator, while the sources as
// they are pass them. Each mutation is a one-token edit of the embedded
// source.
func TestEmulatorCatchesBrokenKernels(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles kernels with g++")
	}
	ln := []string{"layernorm/odd_b2_d147", "layernorm/vit_b16"}
	for _, row := range checkWith(t, "norm.cu", func(s string) string { return s + "\n" }, ln...) {
		if row.Status != runner.OK {
			t.Fatalf("unmutated %s: %s %s", row.Case, row.Status, row.Reason)
		}
	}
	for _, tc := range []struct {
		name, file string
		edit       func(string) string
		dirs       []string
		reason     string // in the first failing row's reason, when set
	}{
		{
			// Two same-typed parameters swapped: the PTX signature is
			// unchanged, so only running the kernel shows it.
			name: "layernorm gamma and beta swapped", file: "norm.cu",
			edit: func(s string) string {
				return strings.Replace(s, "const float* gamma, const float* beta, float* out, int D,",
					"const float* beta, const float* gamma, float* out, int D,", 1)
			},
			dirs: ln,
		},
		{
			// The grid-stride loop visits one item past the end: a write
			// one float past the output tensor.
			name: "FOR_EACH edge guard off by one", file: "gemm_epilogue.cu",
			edit: func(s string) string {
				return strings.Replace(s, "i < (i64)(n); i +=", "i <= (i64)(n); i +=", 1)
			},
			dirs:   []string{"gemm/odd_m13_n37_k29", "gemm/b2_m7_n50_k300"},
			reason: "CUDA_ERROR_ILLEGAL_ADDRESS",
		},
		{
			// block_sum without the barrier between the warps' partial
			// sums and their reads: lanes read partial sums not yet
			// written.
			name: "block_sum barrier removed", file: "norm.cu",
			edit: func(s string) string {
				return strings.Replace(s, "if (lane == 0) part[warp] = v;\n  __syncthreads();", "if (lane == 0) part[warp] = v;", 1)
			},
			dirs: ln,
		},
		{
			// The transpose's tile read before every thread wrote it.
			name: "transpose barrier removed", file: "elementwise.cu",
			edit: func(s string) string {
				return strings.Replace(s, "tile[j][threadIdx.x] = s[(i64)r * C + c];\n  }\n  __syncthreads();",
					"tile[j][threadIdx.x] = s[(i64)r * C + c];\n  }", 1)
			},
			dirs: []string{"t2t_module/odd_b2", "t2t_module/t2t_vit_t_14"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := checkWith(t, tc.file, tc.edit, tc.dirs...)
			failed := 0
			for _, row := range rows {
				t.Logf("%-28s %-4s %s", row.Case, row.Status, row.Reason)
				if row.Status == runner.FAIL && !row.Error {
					if failed == 0 && tc.reason != "" && !strings.Contains(row.Reason, tc.reason) {
						t.Errorf("%s failed with %q, want %s", row.Case, row.Reason, tc.reason)
					}
					failed++
				}
			}
			if failed == 0 {
				t.Errorf("no fixture of %v caught the mutation", tc.dirs)
			}
		})
	}
}

// TestEmulatorStickyFault: a kernel that writes out of bounds ends the
// emulated context with CUDA_ERROR_ILLEGAL_ADDRESS; every later case on
// that backend is a FAIL row naming the fault, without a crash.
func TestEmulatorStickyFault(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles kernels with g++")
	}
	rows := checkWith(t, "gemm_epilogue.cu", func(s string) string {
		return strings.Replace(s, "i < (i64)(n); i +=", "i < (i64)(n) + 4096; i +=", 1)
	}, "gemm/odd_m13_n37_k29", "layernorm/odd_b2_d147")
	if r := rows[0]; r.Status != runner.FAIL || !strings.Contains(r.Reason, "CUDA_ERROR_ILLEGAL_ADDRESS") {
		t.Errorf("faulting case: %s %q, want a FAIL with CUDA_ERROR_ILLEGAL_ADDRESS", r.Status, r.Reason)
	}
	if r := rows[1]; r.Status != runner.FAIL || !strings.Contains(r.Reason, "context was lost") ||
		!strings.Contains(r.Reason, "CUDA_ERROR_ILLEGAL_ADDRESS") {
		t.Errorf("next case: %s %q, want a FAIL naming the lost context", r.Status, r.Reason)
	}
}

// TestEmulatorNames: the emulator's backends carry the precision suffix
// the tolerance classes read.
func TestEmulatorNames(t *testing.T) {
	want := map[Math]string{FP32: "cuda-emu", TF32: "cuda-emu-tf32", BF16: "cuda-emu-bf16", FP16: "cuda-emu-fp16"}
	for m, n := range want {
		if got := emuBackendName(m); got != n {
			t.Errorf("%v: %s, want %s", m, got, n)
		}
		b, err := bench.OpenBackend(n, 0)
		if err != nil {
			t.Errorf("%s not registered: %v", n, err)
			continue
		}
		b.Close()
	}
}
