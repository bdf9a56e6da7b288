//go:build linux

package contention

import (
	"errors"

	"golang.org/x/sys/unix"
)

// probeCPUs returns the first two CPUs of this process's affinity mask.
func probeCPUs() ([2]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return [2]int{-1, -1}, err
	}
	got := [2]int{-1, -1}
	n := 0
	for c := 0; c < len(set)*64 && n < 2; c++ {
		if set.IsSet(c) {
			got[n] = c
			n++
		}
	}
	if n < 2 {
		return [2]int{-1, -1}, errors.New("this process may use only one CPU")
	}
	return got, nil
}

// pin restricts the calling OS thread to CPU c.
func pin(c int) error {
	var set unix.CPUSet
	set.Set(c)
	return unix.SchedSetaffinity(0, &set)
}
