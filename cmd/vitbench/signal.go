package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"vitbench/bench/results"
)

// Exit codes of a command stopped by a signal: 128 + the signal number, as
// a shell reports a process killed by it.
const (
	exitSIGINT  = 128 + int(syscall.SIGINT)  // 130
	exitSIGTERM = 128 + int(syscall.SIGTERM) // 143
)

// stopper turns SIGINT and SIGTERM into a request to stop: the case in
// progress is interrupted (its Done channel reaches the runner, which stops
// between two nodes of the graph, two arrays of its data or two runs of a
// timing loop) and dropped; check, bench, agree and run keep the cases
// already finished, write their files and exit 130 (SIGINT) or 143
// (SIGTERM). The first signal is caught; a second one gets the default
// action and ends the process at once. A nil *stopper never stops.
type stopper struct {
	ch   chan os.Signal
	quit chan struct{}
	done chan struct{} // closed at the first signal
	once sync.Once
	mu   sync.Mutex
	sig  os.Signal
}

// watchSignals starts catching SIGINT and SIGTERM; Close stops it.
func watchSignals() *stopper {
	s := &stopper{ch: make(chan os.Signal, 1), quit: make(chan struct{}), done: make(chan struct{})}
	signal.Notify(s.ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-s.ch:
			s.mu.Lock()
			s.sig = sig
			s.mu.Unlock()
			// A second signal ends the process with the default action.
			signal.Stop(s.ch)
			close(s.done)
			// Written to the real stderr: a signal only reaches the CLI.
			fmt.Fprintf(os.Stderr, "vitbench: %s: stopping the case in progress and writing what finished (send it again to abort at once)\n", sigName(sig))
		case <-s.quit:
		}
	}()
	return s
}

// Done is closed at the first signal; a nil stopper's is nil (never closed).
func (s *stopper) Done() <-chan struct{} {
	if s == nil {
		return nil
	}
	return s.done
}

// Close stops catching signals.
func (s *stopper) Close() {
	if s == nil {
		return
	}
	s.once.Do(func() {
		signal.Stop(s.ch)
		close(s.quit)
	})
}

// Signal returns the signal received, or nil.
func (s *stopper) Signal() os.Signal {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sig
}

// Stopped reports whether a signal asked the command to stop.
func (s *stopper) Stopped() bool { return s.Signal() != nil }

// interrupted is the error of a command stopped by a signal.
type interrupted struct {
	sig         os.Signal
	done, total int // cases finished and cases the command had to run
	what        string
}

func (e interrupted) Error() string {
	return fmt.Sprintf("interrupted by %s: %d of %d %s finished, %d left not run; the finished ones are kept",
		sigName(e.sig), e.done, e.total, e.what, e.total-e.done)
}

// code is the exit status for the signal: 130 for SIGINT, 143 for SIGTERM.
func (e interrupted) code() int { return exitCodeFor(e.sig) }

// interruptedErr returns the error for a stop after done of total cases.
func (s *stopper) interruptedErr(done, total int, what string) interrupted {
	return interrupted{sig: s.Signal(), done: done, total: total, what: what}
}

// markPartial records in a result file's meta that a signal stopped the run
// (results.PartialKey), so that reports built from the file say so.
func markPartial(m *results.Meta, stopped error) {
	m.MarkPartial(stopped.Error())
}

// exitCodeFor returns 128 + the signal's number.
func exitCodeFor(sig os.Signal) int {
	if sig == syscall.SIGTERM {
		return exitSIGTERM
	}
	return exitSIGINT
}

func sigName(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case nil:
		return "a signal"
	}
	return sig.String()
}

// isInterrupted reports whether err is a stop by signal, and its exit code.
func isInterrupted(err error) (int, bool) {
	var e interrupted
	if errors.As(err, &e) {
		return e.code(), true
	}
	return 0, false
}
