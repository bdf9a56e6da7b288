package cpu

import (
	"syscall"
	"time"
	"unsafe"
)

// threadCPUTime is the CPU time of the calling thread
// (clock_gettime(CLOCK_THREAD_CPUTIME_ID)).
func threadCPUTime() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}
