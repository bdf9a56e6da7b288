package main

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"

	"vitbench/bench"
	"vitbench/bench/runner"
)

// bytesFlag is a byte count flag: a plain integer, or one with a binary suffix (K, M, G,
// T, optionally followed by iB or B: 512M, 8GiB). 0 means the default.
type bytesFlag int64

func (b *bytesFlag) String() string { return strconv.FormatInt(int64(*b), 10) }

// Set parses the value; it must be a positive number of bytes.
func (b *bytesFlag) Set(s string) error {
	v, mult := splitUnit(strings.TrimSpace(s))
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return fmt.Errorf("want a positive number of bytes, optionally with K, M, G or T (binary units: 8G = 8 GiB), got %q", s)
	}
	*b = bytesFlag(n * mult)
	return nil
}

// splitUnit splits a binary unit suffix (K, KB, KiB, ... T, any case) from s and returns
// the number part and the unit's multiplier (1 without a suffix).
func splitUnit(s string) (string, int64) {
	lower := strings.ToLower(s)
	for _, u := range []struct {
		prefix string
		mult   int64
	}{{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}} {
		for _, form := range []string{u.prefix + "ib", u.prefix + "b", u.prefix} {
			if strings.HasSuffix(lower, form) {
				return s[:len(s)-len(form)], u.mult
			}
		}
	}
	return s, 1
}

// maxBytesFlag defines -max-bytes on fs: the memory budget of one case.
func maxBytesFlag(fs *flag.FlagSet) *bytesFlag {
	b := new(bytesFlag)
	fs.Var(b, "max-bytes", fmt.Sprintf("memory budget of one case, in bytes (suffixes K, M, G, T); a case that needs more is a FAIL row, not run (default: 3/4 of the memory this process may use, here %s)",
		bench.FormatBytes(runner.DefaultMaxBytes())))
	return b
}
