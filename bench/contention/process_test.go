package contention

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestProcessCPU: a child spinning in one thread is seen to run (its CPU time grows to
// 20 ms within 5 s, however loaded the machine), and a process that does not exist is an
// error.
func TestProcessCPU(t *testing.T) {
	if _, err := ProcessCPU(os.Getpid()); err != nil {
		t.Skipf("no schedstat here: %v", err)
	}
	busy := exec.Command("sh", "-c", "while :; do :; done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { busy.Process.Kill(); busy.Wait() }()
	var got time.Duration
	for t0 := time.Now(); time.Since(t0) < 5*time.Second && got < 20*time.Millisecond; time.Sleep(10 * time.Millisecond) {
		var err error
		if got, err = ProcessCPU(busy.Process.Pid); err != nil {
			t.Fatal(err)
		}
	}
	if got < 20*time.Millisecond {
		t.Errorf("a spinning child ran %v in 5 s", got)
	}
	if _, err := ProcessCPU(1 << 30); err == nil {
		t.Error("a process that does not exist: no error")
	}
}

// TestQuiet: a child that sleeps is quiet once the quiet time has passed (not at the first
// call, which only starts the clock); a child that spins never is; a process whose CPU
// time cannot be read always is.
func TestQuiet(t *testing.T) {
	if _, err := ProcessCPU(os.Getpid()); err != nil {
		t.Skipf("no schedstat here: %v", err)
	}
	run := func(script string) *exec.Cmd {
		c := exec.Command("sh", "-c", script)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c
	}
	sleeper := run("exec sleep 30")
	busy := run("while :; do :; done")
	time.Sleep(20 * time.Millisecond) // past the shells' start
	qs := NewQuiet(sleeper.Process.Pid, 10*time.Millisecond)
	if qs.Now() {
		t.Fatal("quiet at the first call")
	}
	time.Sleep(30 * time.Millisecond)
	if !qs.Now() {
		t.Error("a sleeping child is not quiet after 30 ms")
	}
	// A machine loaded by other work may leave the spinning child off the CPUs for a
	// while: it fails only if it looks quiet three times in a row.
	quiet := 0
	for try := 0; try < 3; try++ {
		qb := NewQuiet(busy.Process.Pid, 10*time.Millisecond)
		if qb.Now() {
			t.Fatal("quiet at the first call")
		}
		time.Sleep(30 * time.Millisecond)
		if qb.Now() {
			quiet++
		}
	}
	if quiet == 3 {
		t.Error("a spinning child is quiet")
	}
	if !NewQuiet(1<<30, time.Second).Now() {
		t.Error("a process whose CPU time cannot be read: not quiet")
	}
}
