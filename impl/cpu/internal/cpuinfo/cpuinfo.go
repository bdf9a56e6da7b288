// Package cpuinfo reads what the operating system says about the
// processor, for the CPU backend and its peak measurement alike.
package cpuinfo

import (
	"os"
	"runtime"
	"strings"
)

// Model returns the processor's model name from /proc/cpuinfo, or GOARCH
// where there is none.
func Model() string {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	return runtime.GOARCH
}
