package main

import (
	"bytes"
	"testing"
	"time"
)

// TestProgressLine: with a total, each finished item's line starts with k/N, the elapsed time
// and the ETA extrapolated from the time per item so far; without one, the elapsed seconds.
func TestProgressLine(t *testing.T) {
	var buf bytes.Buffer
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := t0
	p := &progress{w: &buf, t0: t0, n: 12, now: func() time.Time { return clock }}
	p.start("a")
	clock = clock.Add(30 * time.Second)
	p.done("a done")
	p.start("b")
	clock = clock.Add(1500 * time.Millisecond)
	p.done("b done")
	want := "[ 1/12 0m30s ETA 5m30s] a done (30.00s)\n[ 2/12 0m32s ETA 2m38s] b done (1.50s)\n"
	if buf.String() != want {
		t.Errorf("progress lines\n%q\nwant\n%q", buf.String(), want)
	}
	buf.Reset()
	p = &progress{w: &buf, t0: t0, now: func() time.Time { return t0.Add(2 * time.Second) }}
	p.start("c")
	p.done("c done")
	if want := "[   2.0s] c done (0.00s)\n"; buf.String() != want {
		t.Errorf("without a total: %q, want %q", buf.String(), want)
	}
	if got := clockDur(3723 * time.Second); got != "1h02m03s" {
		t.Errorf("clockDur(3723 s) = %s", got)
	}
}
