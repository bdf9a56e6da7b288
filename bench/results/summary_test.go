package results

import (
	"math"
	"slices"
	"testing"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		name    string
		samples []float64
		want    Summary
		finite  bool // the 95% CI is finite
	}{
		{
			name:    "one to ten shuffled",
			samples: []float64{7, 3, 10, 1, 5, 9, 2, 8, 6, 4},
			// median (5+6)/2; p90 at rank 0.9*9 = 8.1 -> 9.1; Q3 7.75 - Q1 3.25 = 4.5; 4.5/5.5 > 10%.
			want:   Summary{N: 10, Median: 5.5, P90: 9.1, IQR: 4.5, Noisy: true},
			finite: true,
		},
		{
			name:    "tight",
			samples: []float64{100, 101, 99, 100, 102, 98, 100, 101, 99, 100},
			want:    Summary{N: 10, Median: 100, P90: 101.1, IQR: 1.5, Noisy: false},
			finite:  true,
		},
		{
			name:    "too few for a CI",
			samples: []float64{3, 1, 2},
			want:    Summary{N: 3, Median: 2, P90: 2.8, IQR: 1, Noisy: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.samples)
			got := Summarize(in)
			if !slices.Equal(in, tt.samples) {
				t.Errorf("Summarize modified its input: %v", in)
			}
			if got.N != tt.want.N || !near(got.Median, tt.want.Median) || !near(got.P90, tt.want.P90) ||
				!near(got.IQR, tt.want.IQR) || got.Noisy != tt.want.Noisy {
				t.Errorf("Summarize = %+v, want %+v", got, tt.want)
			}
			if tt.finite {
				if !(got.CILow <= got.Median && got.Median <= got.CIHigh) || math.IsInf(got.CILow, 0) || math.IsInf(got.CIHigh, 0) {
					t.Errorf("CI [%v, %v] should be finite and hold the median %v", got.CILow, got.CIHigh, got.Median)
				}
			} else if !math.IsInf(got.CILow, -1) || !math.IsInf(got.CIHigh, 1) {
				t.Errorf("CI [%v, %v], want [-Inf, +Inf] for n=%d", got.CILow, got.CIHigh, got.N)
			}
		})
	}
}

func TestSummarizeCIKnown(t *testing.T) {
	// For n=10 the 95% distribution-free interval of the median is [x(2), x(9)].
	got := Summarize([]float64{7, 3, 10, 1, 5, 9, 2, 8, 6, 4})
	if got.CILow != 2 || got.CIHigh != 9 {
		t.Errorf("CI = [%v, %v], want [2, 9]", got.CILow, got.CIHigh)
	}
}

func TestSummarizeEmpty(t *testing.T) {
	got := Summarize(nil)
	if got.N != 0 || !math.IsNaN(got.Median) || !math.IsNaN(got.P90) || got.Noisy {
		t.Errorf("Summarize(nil) = %+v, want N=0 and NaN statistics", got)
	}
}

func TestNewBenchRowThroughput(t *testing.T) {
	r := NewBenchRow("c", "cpu", 1, 2, "float32", 1000, 4000, 0, 0, []float64{100, 100, 100}, nil)
	if r.MedianNs != 100 || r.GFLOPs != 20 || r.GBps != 40 {
		t.Errorf("median %v GFLOP/s %v GB/s %v, want 100, 20, 40", r.MedianNs, r.GFLOPs, r.GBps)
	}
	r = NewBenchRow("c", "cpu", 1, 2, "float32", 0, 0, 0, 0, []float64{100}, nil)
	if r.GFLOPs != 0 || r.GBps != 0 {
		t.Errorf("no MACs/bytes: GFLOP/s %v GB/s %v, want 0", r.GFLOPs, r.GBps)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
