package results

import (
	"strings"
	"testing"
)

// TestHostileNumbersRejected: a sample that is NaN, infinite, negative or zero, a negative
// count, an unknown status and a second row for the same key are errors naming the file
// and the line of the row, in text and JSON, timing and conformance files alike.
func TestHostileNumbersRejected(t *testing.T) {
	head := "goos: linux\n"
	line := func(v string) string {
		return "Benchmark_a/backend=cpu/batch=1/threads=1/dtype=float32\t1\t" + v + " ns/op\n"
	}
	benchJSON := func(rows string) string {
		return "{\"meta\": {},\n\"rows\": [\n{\"case\": \"ok\", \"n\": 1, \"samples_ns\": [5]},\n" + rows + "\n]}\n"
	}
	checkJSON := func(rows string) string {
		return "{\"meta\": {},\n\"rows\": [\n{\"case\": \"ok\", \"backend\": \"cpu\", \"status\": \"OK\"},\n" + rows + "\n]}\n"
	}
	tests := []struct {
		name, file, data, want string
		check                  bool
	}{
		{"text NaN", "b.txt", head + line("100") + line("NaN"), "b.txt:3:", false},
		{"text +Inf", "b.txt", head + line("+Inf"), "b.txt:2:", false},
		{"text negative", "b.txt", head + line("100") + line("-5"), "b.txt:3:", false},
		{"text zero", "b.txt", head + line("0"), "b.txt:2:", false},
		{"text negative MACs", "b.txt", head + "Benchmark_a/backend=cpu\t1\t100 ns/op\t-3 MACs/op\n", "b.txt:2:", false},
		{"text NaN e2e", "b.txt", head + "Benchmark_a/backend=cpu\t1\t100 ns/op\tNaN e2e-ns/op\n", "b.txt:2:", false},
		{"json NaN sample", "b.json", benchJSON(`{"case": "a", "n": 2, "samples_ns": [1, "NaN"]}`), "b.json:4:", false},
		{"json Inf sample", "b.json", benchJSON(`{"case": "a", "n": 1, "samples_ns": ["+Inf"]}`), "b.json:4:", false},
		{"json negative sample", "b.json", benchJSON(`{"case": "a", "n": 1, "samples_ns": [-1]}`), "b.json:4:", false},
		{"json zero sample", "b.json", benchJSON(`{"case": "a", "n": 1, "samples_ns": [0]}`), "b.json:4:", false},
		{"json negative median", "b.json", benchJSON(`{"case": "a", "median_ns": -4}`), "b.json:4:", false},
		{"json duplicate row", "b.json", benchJSON(`{"case": "ok", "n": 1, "samples_ns": [7]}`), "b.json:4:", false},
		{"check unknown status", "c.json", checkJSON(`{"case": "a", "backend": "cpu", "status": "PASSED"}`), "c.json:4:", true},
		{"check duplicate row", "c.json", checkJSON(`{"case": "ok", "backend": "cpu", "status": "FAIL"}`), "c.json:4:", true},
		{"check negative seconds", "c.json", checkJSON(`{"case": "a", "backend": "cpu", "status": "OK", "seconds": -1}`), "c.json:4:", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTemp(t, tt.file, []byte(tt.data))
			var err error
			if tt.check {
				_, err = ReadCheck(path)
			} else {
				_, err = ReadBench(path)
			}
			if _, _, aerr := ReadAny(path); aerr == nil {
				t.Errorf("ReadAny accepted it")
			}
			want := path + strings.TrimPrefix(tt.want, tt.file)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v, want one naming %s", err, want)
			}
		})
	}
}
