//go:build !linux && amd64 && !purego

package kern

import "errors"

// requestAMX: only the Linux build asks the OS for AMX tile data.
func requestAMX() error { return errors.New("AMX tile data is requested on Linux only") }
