package contention

import (
	"math"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

const statBefore = `cpu  1000 50 300 8000 100 0 20 30 7 0
cpu0 500 25 150 4000 50 0 10 15 7 0
cpu1 500 25 150 4000 50 0 10 15 0 0
intr 123 0 0
ctxt 456
`

// 1 s later on 2 CPUs: user +90, system +20, steal +10 (120 ticks busy), idle +70, iowait +10.
const statAfter = `cpu  1090 50 320 8070 110 0 20 40 9 0
cpu0 545 25 160 4035 55 0 10 20 9 0
cpu1 545 25 160 4035 55 0 10 20 0 0
intr 130 0 0
`

func TestParseStat(t *testing.T) {
	s, err := ParseStat(statBefore)
	if err != nil {
		t.Fatal(err)
	}
	// busy = user+nice+system+irq+softirq+steal = 1000+50+300+0+20+30; guest (7) is inside user.
	if s.Busy != 1400 || s.Total != 9500 || s.CPUs != 2 {
		t.Errorf("ParseStat = %+v, want busy 1400 total 9500 cpus 2", s)
	}
	for _, bad := range []string{"", "intr 1 2\n", "cpu  1 2 x 4\ncpu0 1 2 3 4\n", "cpu 1 2\n", "cpu  1 2 3 4\n"} {
		if _, err := ParseStat(bad); err == nil {
			t.Errorf("ParseStat(%q): no error", bad)
		}
	}
}

// TestForeignArithmetic: 120 busy ticks over 1 s on 2 CPUs is 1.2 CPU-s used; with 0.7 s of it
// our own, the rest (0.5 CPU-s) is a quarter of the 2 CPU-s capacity.
func TestForeignArithmetic(t *testing.T) {
	a, _ := ParseStat(statBefore)
	b, err := ParseStat(statAfter)
	if err != nil {
		t.Fatal(err)
	}
	if got := Foreign(a, b, 700*time.Millisecond, time.Second); math.Abs(got-0.25) > 1e-12 {
		t.Errorf("Foreign = %v, want 0.25", got)
	}
	if got := Foreign(a, b, 1200*time.Millisecond, time.Second); got != 0 {
		t.Errorf("Foreign with all busy time our own = %v, want 0", got)
	}
	if got := Foreign(a, b, 2*time.Second, time.Second); got != 0 {
		t.Errorf("Foreign with more own time than busy (rounding) = %v, want 0 (clamped)", got)
	}
	if got := Foreign(b, a, 0, time.Second); !math.IsNaN(got) {
		t.Errorf("Foreign over counters that went backwards = %v, want NaN", got)
	}
	if got := Foreign(a, b, 0, 0); !math.IsNaN(got) {
		t.Errorf("Foreign over an empty window = %v, want NaN", got)
	}
}

func TestContendedThreshold(t *testing.T) {
	for _, c := range []struct {
		load float64
		wall time.Duration
		want bool
	}{
		{0.25, time.Second, true},
		{0.105, time.Second, false}, // within one tick per CPU (1%) of 10%
		{0.12, time.Second, true},
		{0.15, 100 * time.Millisecond, false}, // a tick is 10% of a 100 ms window
		{0.25, 100 * time.Millisecond, true},
		{math.NaN(), time.Second, false},
		{0.5, 0, false},
	} {
		if got := Contended(c.load, c.wall); got != c.want {
			t.Errorf("Contended(%v, %v) = %v, want %v", c.load, c.wall, got, c.want)
		}
	}
}

// TestBusyChildIsFlagged: a window during which other processes keep every CPU busy is
// contended, however idle this process is.
func TestBusyChildIsFlagged(t *testing.T) {
	if runtime.GOOS != "linux" {
		l := Start().Stop()
		if !math.IsNaN(l.Foreign) || l.Contended {
			t.Fatalf("without /proc/stat: %+v, want NaN and not contended", l)
		}
		return
	}
	var kids []*exec.Cmd
	for range runtime.NumCPU() {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBusyLoop$")
		cmd.Env = append(os.Environ(), "CONTENTION_BUSY_CHILD=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		kids = append(kids, cmd)
	}
	defer func() {
		for _, k := range kids {
			k.Process.Kill()
			k.Wait()
		}
	}()
	time.Sleep(200 * time.Millisecond) // the children are running
	w := Start()
	time.Sleep(600 * time.Millisecond)
	l := w.Stop()
	if !l.Contended || l.Foreign < 0.5 {
		t.Errorf("window beside %d busy processes: %+v, want contended with foreign load ≥ 0.5", len(kids), l)
	}
}

// TestHelperBusyLoop is the busy child of TestBusyChildIsFlagged (it does nothing in a normal run).
func TestHelperBusyLoop(t *testing.T) {
	if os.Getenv("CONTENTION_BUSY_CHILD") != "1" {
		return
	}
	x := 0
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		for i := 0; i < 1e6; i++ {
			x += i
		}
	}
	_ = x
	os.Exit(0)
}

// TestMeterSumsWindows: a Meter that measured nothing is NaN; its windows' wall times add
// up without the time between them; this process's own CPU time is not foreign, and a
// child process spinning through a window is.
func TestMeterSumsWindows(t *testing.T) {
	var m Meter
	if l, c := m.Load(); !math.IsNaN(l) || c {
		t.Fatalf("empty meter: %v %v, want NaN, false", l, c)
	}
	m.End() // without Begin: ignored
	if l, _ := m.Load(); !math.IsNaN(l) {
		t.Fatalf("End without Begin counted: %v", l)
	}
	spin := func(d time.Duration) {
		for t0 := time.Now(); time.Since(t0) < d; {
		}
	}
	for i := 0; i < 3; i++ {
		m.Begin()
		spin(100 * time.Millisecond)
		m.End()
		time.Sleep(20 * time.Millisecond)
	}
	l, _ := m.Load()
	if math.IsNaN(l) {
		t.Skip("no /proc/stat here")
	}
	if l < 0 || l > 1 {
		t.Fatalf("load %v outside [0, 1]", l)
	}
	if m.wall < 300*time.Millisecond || m.wall > 600*time.Millisecond {
		t.Errorf("summed wall %v, want about 300 ms (the gaps not counted)", m.wall)
	}
	child := exec.Command("sh", "-c", "while :; do :; done")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	var busy Meter
	busy.Begin()
	time.Sleep(300 * time.Millisecond)
	busy.End()
	child.Process.Kill()
	child.Wait()
	got, _ := busy.Load()
	if cpus := float64(max(busy.cpus, 1)); got < 0.5/cpus {
		t.Errorf("a child spinning through the window: foreign load %.3f, want about %.3f", got, 1/cpus)
	}
}
