package contention

import (
	"math"
	"time"
)

// Meter sums the foreign load over several windows: the samples of one side of an
// interleaved run (vitbench pair), between which the other side runs and must not count.
// Unlike Start it makes no round-trip probes, so a window costs two reads of /proc/stat
// and of the process's CPU time. The zero Meter is ready; Begin and End bracket each window.
type Meter struct {
	foreign float64       // CPU seconds other processes used in the windows so far
	wall    time.Duration // the windows' total length
	cpus    int
	failed  bool // a window could not be read

	open   bool
	t0     time.Time
	before Stat
	own    time.Duration
}

// Begin opens a window.
func (m *Meter) Begin() {
	m.open = false
	before, err := readStat()
	if err != nil {
		m.failed = true
		return
	}
	own, err := ownCPU()
	if err != nil {
		m.failed = true
		return
	}
	m.before, m.own, m.t0, m.open = before, own, time.Now(), true
}

// End closes the window Begin opened and adds it to the sums.
func (m *Meter) End() {
	if !m.open {
		return
	}
	m.open = false
	wall := time.Since(m.t0)
	after, errStat := readStat()
	own, errOwn := ownCPU()
	if errStat != nil || errOwn != nil || after.Busy < m.before.Busy {
		m.failed = true
		return
	}
	m.foreign += float64(after.Busy-m.before.Busy)/TicksPerSecond - (own - m.own).Seconds()
	m.wall += wall
	m.cpus = max(m.cpus, m.before.CPUs, after.CPUs)
}

// Load returns the foreign load of all the windows together (their foreign CPU time over
// their summed wall time × CPUs, clamped to [0, 1]; NaN when a window could not be measured
// or none was) and whether it counts as contended (Contended over the summed wall time).
func (m *Meter) Load() (load float64, contended bool) {
	if m.failed || m.wall <= 0 || m.cpus == 0 {
		return math.NaN(), false
	}
	load = min(1, max(0, m.foreign/(m.wall.Seconds()*float64(m.cpus))))
	return load, Contended(load, m.wall)
}
