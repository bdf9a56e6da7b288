// Package contention measures how much CPU time other processes took while a timing window
// ran: the system's busy time from /proc/stat minus this process's own CPU time
// (getrusage), over the window's capacity (wall time × CPUs). A result timed while the
// machine was busy with something else is then flagged instead of silently published.
package contention

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Threshold is the foreign load above which a window counts as contended.
const Threshold = 0.10

// TicksPerSecond is the unit of /proc/stat's counters (USER_HZ, 100 on every Linux ABI).
const TicksPerSecond = 100

// Stat is the aggregate "cpu" line of /proc/stat: busy and total ticks since boot summed over
// all CPUs, and how many "cpuN" lines there were.
type Stat struct {
	Busy, Total uint64
	CPUs        int
}

// ParseStat reads the aggregate cpu line of /proc/stat text. Busy is every column but idle
// and iowait (user, nice, system, irq, softirq, steal; guest time is already inside user and
// nice, so guest and guest_nice are not added again); Total adds idle and iowait.
func ParseStat(text string) (Stat, error) {
	var s Stat
	found := false
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		if f[0] != "cpu" {
			if _, err := strconv.Atoi(f[0][3:]); err == nil {
				s.CPUs++
			}
			continue
		}
		if len(f) < 5 {
			return Stat{}, fmt.Errorf("/proc/stat: cpu line %q: want at least user nice system idle", line)
		}
		var v [8]uint64
		for i := 1; i < len(f) && i <= len(v); i++ {
			n, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				return Stat{}, fmt.Errorf("/proc/stat: cpu line, column %d: %q is not a tick count", i, f[i])
			}
			v[i-1] = n
		}
		idle := v[3] + v[4]
		for _, n := range v {
			s.Total += n
		}
		s.Busy = s.Total - idle
		found = true
	}
	if !found {
		return Stat{}, fmt.Errorf("/proc/stat: no aggregate cpu line")
	}
	if s.CPUs == 0 {
		return Stat{}, fmt.Errorf("/proc/stat: no cpuN lines")
	}
	return s, nil
}

// Foreign returns the share of the machine's CPU capacity that processes other than this one
// used between two snapshots: ((after.Busy − before.Busy)/TicksPerSecond − own) / (wall ×
// CPUs), where own is this process's CPU time over the window, clamped to [0, 1]. It is NaN
// when the window is empty or the counters went backwards.
func Foreign(before, after Stat, own, wall time.Duration) float64 {
	cpus := max(before.CPUs, after.CPUs)
	if wall <= 0 || cpus == 0 || after.Busy < before.Busy {
		return math.NaN()
	}
	busy := float64(after.Busy-before.Busy) / TicksPerSecond
	load := (busy - own.Seconds()) / (wall.Seconds() * float64(cpus))
	return min(1, max(0, load))
}

// Contended reports whether a window of wall time with the given foreign load counts as
// contended: the load exceeds Threshold by more than the counters' rounding. Each CPU's
// busy count can be one tick off at either end of the window, so a load up to
// 1/(wall·TicksPerSecond) is rounding, not another process. NaN (not measured) is never
// contended.
func Contended(load float64, wall time.Duration) bool {
	if math.IsNaN(load) || wall <= 0 {
		return false
	}
	return load > Threshold+1/(wall.Seconds()*TicksPerSecond)
}

// Window is a measurement in progress; Start begins one.
type Window struct {
	start  time.Time
	before Stat
	own    time.Duration
	ok     bool
	rtt    RoundTrip // probed at Start
}

// Load is what a window measured: the foreign load (NaN where the platform has no
// /proc/stat) and whether it counts as contended, and the cross-CPU round trip probed at
// its start and at its end (NaN when a probe failed).
type Load struct {
	Foreign    float64
	Contended  bool
	Wall       time.Duration
	RoundTrips [2]float64
}

// CoresMoved reports whether the window's two probes differ by more than Moved: the CPUs'
// arrangement changed while it ran.
func (l Load) CoresMoved() bool { return Differ(l.RoundTrips[0], l.RoundTrips[1]) }

// RoundTripNs is the larger of the window's two probes, 0 when neither was measured.
func (l Load) RoundTripNs() float64 { return MaxRoundTrip(l.RoundTrips[:]...) }

// MaxRoundTrip is the largest measured (finite, positive) round trip of rtts, 0 when none is.
func MaxRoundTrip(rtts ...float64) float64 {
	m := 0.0
	for _, r := range rtts {
		if r > 0 && !math.IsInf(r, 0) {
			m = max(m, r)
		}
	}
	return m
}

// Start probes the cross-CPU round trip, then snapshots the system's and this process's
// CPU counters.
func Start() *Window {
	rtt := ProbeRoundTrip()
	w := &Window{start: time.Now(), rtt: rtt}
	var err error
	if w.before, err = readStat(); err == nil {
		w.own, err = ownCPU()
		w.ok = err == nil
	}
	return w
}

// Stop ends the window, probes the round trip again and returns its Load.
func (w *Window) Stop() Load {
	wall := time.Since(w.start)
	end := ProbeRoundTrip()
	l := Load{Foreign: math.NaN(), Wall: wall, RoundTrips: [2]float64{w.rtt.Nanos, end.Nanos}}
	if !w.ok {
		return l
	}
	after, err := readStat()
	if err != nil {
		return l
	}
	own, err := ownCPU()
	if err != nil {
		return l
	}
	l.Foreign = Foreign(w.before, after, own-w.own, wall)
	l.Contended = Contended(l.Foreign, wall)
	return l
}
