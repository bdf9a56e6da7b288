package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress prints one line per finished item; on a terminal it also shows
// the item in flight. With a total (n > 0) each line starts with the count of
// items done, the time elapsed and an estimate of the time left.
type progress struct {
	w     io.Writer
	tty   bool
	t0    time.Time
	begin time.Time
	k, n  int              // items done and expected in all (n = 0: not known)
	now   func() time.Time // the clock (tests replace it)
}

func newProgress(w io.Writer) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progress{w: w, tty: tty, t0: time.Now(), now: time.Now}
}

func (p *progress) start(what string) {
	p.begin = p.now()
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K… %s", what)
	}
}

func (p *progress) done(line string) {
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	p.k++
	fmt.Fprintf(p.w, "%s %s (%.2fs)\n", p.status(), line, p.now().Sub(p.begin).Seconds())
}

// status is the line's prefix: "[  12.3s]" without a total; with one, "[k/n elapsed ETA
// left]", where left extrapolates the time per item so far (whatever else ran meanwhile,
// such as PyTorch's groups in `run`, included) over the items still to come.
func (p *progress) status() string {
	el := p.now().Sub(p.t0)
	if p.n <= 0 {
		return fmt.Sprintf("[%6.1fs]", el.Seconds())
	}
	eta := "?"
	if p.k > 0 {
		eta = clockDur(el / time.Duration(p.k) * time.Duration(max(0, p.n-p.k)))
	}
	w := len(fmt.Sprint(p.n))
	return fmt.Sprintf("[%*d/%d %s ETA %s]", w, p.k, p.n, clockDur(el), eta)
}

// clockDur formats d as minutes and seconds, "3m07s" (hours as "1h02m07s").
func clockDur(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	if s >= 3600 {
		return fmt.Sprintf("%dh%02dm%02ds", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%dm%02ds", s/60, s%60)
}
