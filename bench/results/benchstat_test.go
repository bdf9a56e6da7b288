package results

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// buildBenchstat builds golang.org/x/perf/cmd/benchstat at the version go.mod requires and
// returns its path; it skips the test when no go command is found, unless $CI is set.
func buildBenchstat(t *testing.T) string {
	t.Helper()
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goCmd); err != nil {
		if goCmd, err = exec.LookPath("go"); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("no go command to build benchstat: %v", err)
			}
			t.Skip("no go command to build benchstat")
		}
	}
	bin := filepath.Join(t.TempDir(), "benchstat")
	out, err := exec.Command(goCmd, "build", "-o", bin, "golang.org/x/perf/cmd/benchstat").CombinedOutput()
	if err != nil {
		t.Fatalf("go build benchstat: %v\n%s", err, out)
	}
	return bin
}

// twoRuns returns two timing files of the same cases and setup as two runs write them:
// another commit and date, other samples, the second case 20% slower.
func twoRuns() (a, b BenchFile) {
	mk := func(commit, date string, scale float64, runs int) BenchFile {
		f := BenchFile{Meta: Meta{Tool: "vitbench", Commit: commit, Date: date, CPU: "Test CPU", ISA: "avx2",
			GOOS: "linux", GOARCH: "amd64", Machine: "host (Test CPU)", Threads: 2}}
		for i, c := range []string{"patch_embed/vit_s16", "gemm/vit_s16_qkv"} {
			s := make([]float64, 10)
			rn := make([]int, 10)
			for j := range s {
				s[j] = 1e6 * (1 + float64(i)*(scale-1)) * (1 + 0.001*float64((j*7)%5))
				rn[j] = runs
			}
			r := NewBenchRow(c, "cpu", 1, 2, "float32", 1000000, 400000, 65536, 0, s, nil)
			r.Runs = rn
			f.Rows = append(f.Rows, r)
		}
		return f
	}
	return mk("1111111", "2026-12-01T10:00:00Z", 1, 7), mk("2222222", "2026-12-01T11:30:00Z", 1.2, 8)
}

// TestBenchstatOneTable runs the real benchstat on two files of two runs of the same cases:
// it must print one sec/op table comparing them (a "vs base" column, the slowed case's
// delta), the case names without "Benchmark_" debris, and B/op and moved-B/op tables; the
// commit and date, which differ, must not split the tables.
func TestBenchstatOneTable(t *testing.T) {
	bin := buildBenchstat(t)
	a, b := twoRuns()
	dir := t.TempDir()
	var paths, configs []string
	for i, f := range []BenchFile{a, b} {
		var buf bytes.Buffer
		if err := WriteBenchText(&buf, f); err != nil {
			t.Fatal(err)
		}
		configs = append(configs, configLines(buf.String()))
		p := filepath.Join(dir, []string{"base.txt", "head.txt"}[i])
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	if configs[0] != configs[1] {
		t.Errorf("the config lines of two runs of the same setup differ:\n%s\n---\n%s", configs[0], configs[1])
	}
	out, err := exec.Command(bin, paths...).CombinedOutput()
	if err != nil {
		t.Fatalf("benchstat: %v\n%s", err, out)
	}
	text := string(out)
	lines := strings.Split(text, "\n")
	var secTables, vsBase int
	for _, l := range lines {
		if strings.Contains(l, "sec/op") {
			secTables++
			if strings.Contains(l, "vs base") {
				vsBase++
			}
		}
	}
	if secTables != 1 || vsBase != 1 {
		t.Errorf("benchstat printed %d sec/op table headers (%d with a vs base column), want one with it:\n%s", secTables, vsBase, text)
	}
	if n := strings.Count(text, "goos: linux"); n != 1 {
		t.Errorf("benchstat printed %d config blocks, want 1 (volatile keys split them):\n%s", n, text)
	}
	for _, want := range []string{"Gemm/vit_s16_qkv/backend=cpu/batch=1/threads=2/dtype=float32", "+20.", "B/op", "moved-B/op"} {
		if !strings.Contains(text, want) {
			t.Errorf("benchstat output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "_patch_embed") || strings.Contains(text, "_gemm") {
		t.Errorf("benchstat shows the old Benchmark_ names:\n%s", text)
	}
}

// configLines returns the benchfmt config lines ("key: value") of a text result file.
func configLines(text string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if _, _, ok := parseConfigLine(l); ok {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
