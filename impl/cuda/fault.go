package cuda

import (
	"errors"
	"fmt"
	"sync"
)

// stickyCodes are the CUresults after which a context is unusable for
// good: a kernel faulted (illegal or misaligned address, illegal
// instruction, hardware stack error, invalid PC or address space), failed
// or timed out. Every later call on the context returns the same error
// until the process ends, so the backend stops at once and says why.
var stickyCodes = map[int]bool{
	700: true, // CUDA_ERROR_ILLEGAL_ADDRESS
	702: true, // CUDA_ERROR_LAUNCH_TIMEOUT
	714: true, // CUDA_ERROR_HARDWARE_STACK_ERROR
	715: true, // CUDA_ERROR_ILLEGAL_INSTRUCTION
	716: true, // CUDA_ERROR_MISALIGNED_ADDRESS
	717: true, // CUDA_ERROR_INVALID_ADDRESS_SPACE
	718: true, // CUDA_ERROR_INVALID_PC
	719: true, // CUDA_ERROR_LAUNCH_FAILED
}

// lostContext is the error of every call after a sticky fault.
type lostContext struct {
	backend string
	cause   error // the call that returned the sticky error
}

func (e *lostContext) Error() string {
	return fmt.Sprintf("%s: the CUDA context was lost to an earlier fault (%v); every later call on this backend fails until the process restarts",
		e.backend, e.cause)
}

func (e *lostContext) Unwrap() error { return e.cause }

// faultState remembers a backend's sticky fault.
type faultState struct {
	mu  sync.Mutex
	err error
}

// isSticky reports whether err carries a sticky driver error.
func isSticky(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.API == "CUDA driver" && stickyCodes[ae.Code]
}

// run executes f on the device thread, as w.run does, and records a sticky
// fault it returns: from then on ready() refuses every call.
func (b *Backend) run(f func() error) error {
	err := b.w.run(f)
	if err != nil && isSticky(err) {
		b.faults.mu.Lock()
		if b.faults.err == nil {
			b.faults.err = err
		}
		b.faults.mu.Unlock()
	}
	return err
}

// lost returns the lostContext error once a sticky fault happened, or nil.
func (b *Backend) lost() error {
	b.faults.mu.Lock()
	defer b.faults.mu.Unlock()
	if b.faults.err == nil {
		return nil
	}
	return &lostContext{backend: b.name, cause: b.faults.err}
}
