package main

import (
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"vitbench/bench/results"
	"vitbench/impl/cpu"
)

// commit returns the VCS revision the binary was built from, or the
// working tree's HEAD when the build did not stamp one, or "unknown".
func commit() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		rev, dirty := "", false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			if len(rev) > 12 {
				rev = rev[:12]
			}
			if dirty {
				rev += "-dirty"
			}
			return rev
		}
	}
	if out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output(); err == nil {
		return strings.TrimSpace(string(out))
	}
	return "unknown"
}

// newMeta describes this run for result files.
func newMeta(threads int) results.Meta {
	return results.Meta{
		Tool:    "vitbench",
		Commit:  commit(),
		Date:    time.Now().UTC().Format(time.RFC3339),
		CPU:     cpu.CPUModel(),
		ISA:     cpu.ISA(),
		GOOS:    runtime.GOOS,
		GOARCH:  runtime.GOARCH,
		Threads: threads,
	}
}
