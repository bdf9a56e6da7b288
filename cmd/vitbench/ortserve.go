package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// ortServer is reference/bench_ort.js --serve running as a child: it holds one case's
// ONNX Runtime session and times one sample per request, so that vitbench pair can
// alternate ONNX Runtime's samples with vitbench's (the protocol is described at the top
// of bench_ort.js).
type ortServer struct {
	// Pid is the server's process id (its threads' CPU time tells when ONNX Runtime's
	// spinning threads have gone quiet).
	Pid  int
	in   io.WriteCloser
	out  *bufio.Scanner
	wait func() error
	done func()
	// Version, CPU and Opset are what the server said about itself when it started.
	Version, CPU string
	Opset        int
}

// ortReply is one answer line of the server; which fields are set depends on the request.
type ortReply struct {
	Version string   `json:"version"`
	CPU     string   `json:"cpu"`
	Opset   int      `json:"opset"`
	OK      bool     `json:"ok"`
	Label   string   `json:"label"`
	NS      string   `json:"ns"`
	Error   string   `json:"error"`
	Runs    int      `json:"runs"`
	Nanos   float64  `json:"ns_per_run"`
	Load    *float64 `json:"load"`
	RSS     int64    `json:"rss"`
}

// startOrtServer starts node on bench_ort.js --serve for the models of manifest, with
// threads intra-op threads, warmup untimed runs per case and samples of at least
// minSample, and reads its greeting. stop kills it.
func startOrtServer(stop <-chan struct{}, cfg ortConfig, manifest string, warmup int, stderr io.Writer) (*ortServer, error) {
	args := []string{filepath.Join(cfg.refDir, "bench_ort.js"), "--manifest", manifest, "--serve",
		"--threads", strconv.Itoa(cfg.threads), "--warmup", strconv.Itoa(warmup),
		"--min-sample-ms", strconv.FormatFloat(float64(cfg.minSample)/1e6, 'f', -1, 64)}
	if cfg.modules != "" {
		args = append(args, "--ort-modules", cfg.modules)
	}
	cmd, done := stoppableCommand(stop, cfg.node, args, stderr)
	cmd.Env = append(os.Environ(), "ONNXRUNTIME_NODE_INSTALL=skip")
	cmd.Stdout = nil
	in, err := cmd.StdinPipe()
	if err != nil {
		done()
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		done()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		done()
		return nil, fmt.Errorf("%s bench_ort.js --serve: %v", cfg.node, err)
	}
	s := &ortServer{Pid: cmd.Process.Pid, in: in, out: bufio.NewScanner(out), wait: cmd.Wait, done: done}
	s.out.Buffer(make([]byte, 0, 64<<10), 1<<20)
	hello, err := s.read()
	if err != nil {
		s.Close()
		return nil, err
	}
	s.Version, s.CPU, s.Opset = hello.Version, hello.CPU, hello.Opset
	return s, nil
}

// read returns the server's next answer.
func (s *ortServer) read() (ortReply, error) {
	if !s.out.Scan() {
		err := s.out.Err()
		if err == nil {
			err = errors.New("it exited")
		}
		return ortReply{}, fmt.Errorf("bench_ort.js --serve: no answer: %v", err)
	}
	var r ortReply
	if err := json.Unmarshal(s.out.Bytes(), &r); err != nil {
		return ortReply{}, fmt.Errorf("bench_ort.js --serve: answer %.80q: %v", s.out.Text(), err)
	}
	return r, nil
}

// request sends one request and returns its answer; an {"error": ...} answer is an error.
func (s *ortServer) request(req any) (ortReply, error) {
	line, err := json.Marshal(req)
	if err != nil {
		return ortReply{}, err
	}
	if _, err := s.in.Write(append(line, '\n')); err != nil {
		return ortReply{}, fmt.Errorf("bench_ort.js --serve: %v", err)
	}
	r, err := s.read()
	if err == nil && r.Error != "" {
		err = errors.New(r.Error)
	}
	return r, err
}

// Open loads the model of caseName at batch and runs its warm-up. It returns the row label
// (what ran), or a non-empty reason when ONNX Runtime cannot run the case (NS).
func (s *ortServer) Open(caseName string, batch int) (label, ns string, err error) {
	r, err := s.request(map[string]any{"open": caseName, "batch": batch})
	return r.Label, r.NS, err
}

// Sample runs the open model untimed for at least rewarm (at least once), then times one
// sample: the mean ns per run, the runs in it and the foreign load over it (NaN when not
// measured).
func (s *ortServer) Sample(rewarm time.Duration) (ns float64, runs int, load float64, err error) {
	r, err := s.request(map[string]any{"sample": true, "rewarm_ms": float64(rewarm) / 1e6})
	if err != nil {
		return 0, 0, 0, err
	}
	if r.Runs < 1 || !(r.Nanos > 0) {
		return 0, 0, 0, fmt.Errorf("bench_ort.js --serve: sample of %d runs, %v ns", r.Runs, r.Nanos)
	}
	load = math.NaN()
	if r.Load != nil {
		load = *r.Load
	}
	return r.Nanos, r.Runs, load, nil
}

// CloseCase releases the open model and returns the server's peak RSS over it.
func (s *ortServer) CloseCase() (rss int64, err error) {
	r, err := s.request(map[string]bool{"close": true})
	return r.RSS, err
}

// Close ends the server: its input is closed and it exits; one still running five seconds
// later gets SIGTERM, and is killed a second after that.
func (s *ortServer) Close() error {
	s.in.Close()
	t := time.AfterFunc(5*time.Second, s.done)
	defer t.Stop()
	err := s.wait()
	s.done()
	return err
}
