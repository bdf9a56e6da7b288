//go:build !linux

package contention

import (
	"errors"
	"time"
)

// errNoProcStat: only Linux has /proc/stat; the load is then not measured (NaN, null in JSON).
var errNoProcStat = errors.New("no /proc/stat on this platform")

func readStat() (Stat, error) { return Stat{}, errNoProcStat }

func ownCPU() (time.Duration, error) { return 0, errNoProcStat }
