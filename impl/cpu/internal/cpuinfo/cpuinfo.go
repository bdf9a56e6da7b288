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
	if m := field("model name"); m != "" {
		return m
	}
	return runtime.GOARCH
}

// Vendor returns the processor's vendor string from /proc/cpuinfo
// ("GenuineIntel", "AuthenticAMD"), or "" where there is none.
func Vendor() string { return field("vendor_id") }

// field returns the first processor's value of key in /proc/cpuinfo, or
// "" where there is none.
func field(key string) string {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
