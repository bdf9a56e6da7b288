package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"vitbench/bench/cases"
	"vitbench/bench/results"
)

// ortBackend is the backend name of the rows reference/bench_ort.js writes.
const ortBackend = "ort"

// ortConfig is what runOrt needs: the interpreter and the reference/ directory holding
// onnx_export.py and bench_ort.js, node, where onnxruntime-node is installed, and the
// protocol (threads, samples, sample length) shared with vitbench and PyTorch.
type ortConfig struct {
	python, refDir, node, modules string
	threads, count                int
	batch                         int // every case at this batch; 0: each case's own
	minSample                     time.Duration
	work                          string // a directory the exported models may be written under
}

// runOrt exports the cases of group to ONNX (reference/onnx_export.py) and times them with
// ONNX Runtime (reference/bench_ort.js), returning the Go benchmark text it wrote. When node
// or the export cannot run at all, every case of group is an NS line with the reason, so the
// report says why the ORT column is empty instead of leaving it out. The exported models are
// deleted afterwards (a ViT-L is over a gigabyte). stop interrupts the stage as runTorch's.
func runOrt(stop <-chan struct{}, cfg ortConfig, groupRE *regexp.Regexp, stderr io.Writer) ([]byte, error) {
	group := cases.Match(groupRE)
	runRE := groupRE.String()
	nodeExe, err := exec.LookPath(cfg.node)
	if err != nil {
		return ortNSText(group, cfg.threads, cfg.batch, "onnxruntime-node not installed (node not found: "+err.Error()+")")
	}
	dir, err := os.MkdirTemp(cfg.work, "onnx-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	start := time.Now()
	exportArgs := append([]string{filepath.Join(cfg.refDir, "onnx_export.py"), "--out", dir, "--run", runRE}, batchArgs(cfg.batch)...)
	if err := runChild(stop, cfg.python, exportArgs, nil, stderr); err != nil {
		if isStopped(stop) {
			return nil, err
		}
		return ortNSText(group, cfg.threads, cfg.batch, "ONNX export failed: "+err.Error())
	}
	exported := time.Since(start)
	out := filepath.Join(dir, "ort.txt")
	args := []string{filepath.Join(cfg.refDir, "bench_ort.js"), "--manifest", filepath.Join(dir, "manifest.json"), "-o", out,
		"--threads", strconv.Itoa(cfg.threads), "--count", strconv.Itoa(cfg.count),
		"--min-sample-ms", strconv.FormatFloat(float64(cfg.minSample)/1e6, 'f', -1, 64)}
	if cfg.modules != "" {
		args = append(args, "--ort-modules", cfg.modules)
	}
	if err := runChild(stop, nodeExe, args, []string{"ONNXRUNTIME_NODE_INSTALL=skip"}, stderr); err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "ONNX Runtime baseline: export %.1fs, timing %.1fs\n", exported.Seconds(), (time.Since(start) - exported).Seconds())
	return raw, nil
}

// ortNSText is a result file with one NS line per case of group (at batch, or each case's
// own when batch is 0), each with reason.
func ortNSText(group []cases.Case, threads, batch int, reason string) ([]byte, error) {
	f := results.BenchFile{Meta: results.Meta{Extra: map[string]string{"ort-version": "not installed"}}}
	for _, c := range group {
		b := c.Batch
		if batch > 0 {
			b = batch
		}
		f.Failed = append(f.Failed, results.BenchFailure{Case: c.Name, Backend: ortBackend, Batch: b, Threads: threads,
			DType: "float32", Error: reason, NS: true})
	}
	var buf bytes.Buffer
	if err := results.WriteBenchText(&buf, f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// stoppableCommand is exe with args, its output to stderr, that a closed
// stop ends: SIGTERM, then a kill a second later. Call done once it ran.
func stoppableCommand(stop <-chan struct{}, exe string, args []string, stderr io.Writer) (cmd *exec.Cmd, done func()) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	cmd = exec.CommandContext(ctx, exe, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Second
	cmd.Stdout, cmd.Stderr = stderr, stderr
	return cmd, cancel
}

// runChild runs exe with args (and the environment plus extra), its output to stderr; a
// closed stop sends it SIGTERM, and kills it a second later.
func runChild(stop <-chan struct{}, exe string, args, extra []string, stderr io.Writer) error {
	cmd, done := stoppableCommand(stop, exe, args, stderr)
	defer done()
	cmd.Env = append(os.Environ(), extra...)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %v", exe, filepath.Base(args[0]), err)
	}
	return nil
}

// isStopped reports whether stop is closed.
func isStopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// defaultOrtModules is the node_modules folder ci/install-deps.sh installs onnxruntime-node
// into: $XDG_CACHE_HOME/vitbench/ort/node_modules, else ~/.cache/vitbench/ort/node_modules
// (bench_ort.js looks there too, and then on Node's own module path).
func defaultOrtModules() string {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "vitbench", "ort", "node_modules")
}

// ortWanted decides whether `run -ort mode` times the ONNX Runtime baseline: on always (a
// missing onnxruntime-node then gives NS rows), off never, auto when node is on the PATH and
// the modules folder holds onnxruntime-node.
func ortWanted(mode, node, modules string) bool {
	switch mode {
	case "on":
		return true
	case "auto":
		if _, err := exec.LookPath(node); err != nil {
			return false
		}
		return isFile(filepath.Join(modules, "onnxruntime-node", "package.json"))
	}
	return false
}
