//go:build linux && amd64 && !purego

package kern

import (
	"fmt"
	"syscall"
)

// requestAMX asks Linux for the use of AMX tile data in this process
// (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, Linux 5.16 and
// later); without it the first tile instruction faults. The permission
// covers every thread of the process, those started later included.
func requestAMX() error {
	const (
		archReqXcompPerm  = 0x1023
		xfeatureXtiledata = 18
	)
	if _, _, e := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXtiledata, 0); e != 0 {
		return fmt.Errorf("arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA): %w", e)
	}
	return nil
}
