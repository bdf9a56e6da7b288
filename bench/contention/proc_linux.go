//go:build linux

package contention

import (
	"os"
	"syscall"
	"time"
)

// readStat reads /proc/stat.
func readStat() (Stat, error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(string(raw))
}

// ownCPU returns the user and system CPU time this process (all its threads) has used.
func ownCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
