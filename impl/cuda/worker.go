package cuda

import (
	"fmt"
	"runtime"
)

// worker is a goroutine locked to one OS thread, on which the device's
// context is current: every driver, NVRTC-loaded module and cuBLAS call of
// a Backend runs there, as closures sent over a channel.
type worker struct {
	calls chan func()
}

// startWorker starts the thread and runs init on it first; when init
// fails the thread ends and the error is returned.
func startWorker(init func() error) (*worker, error) {
	w := &worker{calls: make(chan func())}
	started := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with the goroutine (Close), so no
		// other goroutine inherits the thread with a context current.
		runtime.LockOSThread()
		if err := safeCall(init); err != nil {
			started <- err
			return
		}
		started <- nil
		for f := range w.calls {
			f()
		}
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return w, nil
}

// run executes f on the worker's thread and returns its error.
func (w *worker) run(f func() error) error {
	done := make(chan error, 1)
	w.calls <- func() { done <- safeCall(f) }
	return <-done
}

// stop ends the worker after the calls already sent.
func (w *worker) stop() { close(w.calls) }

// safeCall runs f, turning a panic into an error so that one bad node
// cannot take the worker thread down.
func safeCall(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cuda: panic on the device thread: %v", r)
		}
	}()
	return f()
}
