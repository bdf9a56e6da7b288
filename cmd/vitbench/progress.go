package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress prints one line per finished item; on a terminal it also shows
// the item in flight.
type progress struct {
	w     io.Writer
	tty   bool
	t0    time.Time
	begin time.Time
}

func newProgress(w io.Writer) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progress{w: w, tty: tty, t0: time.Now()}
}

func (p *progress) start(what string) {
	p.begin = time.Now()
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K… %s", what)
	}
}

func (p *progress) done(line string) {
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, "[%6.1fs] %s (%.2fs)\n", time.Since(p.t0).Seconds(), line, time.Since(p.begin).Seconds())
}
