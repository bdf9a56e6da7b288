// Command vitbench checks vision-transformer components and networks
// against PyTorch fixtures and times them on every available backend.
//
//	vitbench list     [-json] [-run RE]
//	vitbench info     [-json]
//	vitbench check    [-backend B] [-fixtures DIR] [-run RE] [-json FILE]
//	vitbench bench    [-backend B] [-run RE] [-batch N] [-threads N] [-count N] [-o FILE] [-json FILE] [-cpuprofile FILE]
//	vitbench report   [-o FILE] [-peak FILE] [-base BENCH] RESULTS...
//	vitbench compare  [-max-slowdown P] BASE HEAD
//	vitbench baseline -o FILE | -check FILE
//	vitbench peak     [-json]
//	vitbench pair     -run RE [-backend B] [-count N] [-o DIR]
//	vitbench pairs    [-target X] [-o FILE] PAIR-DIR...
//	vitbench run      [-o DIR] [-torch auto|on|off] [-base BENCH]
//
// Exit status: 0 success, 1 a case failed (a FAIL row, a case over the
// memory budget, a compare gate tripped), 2 bad usage or unreadable input,
// 3 a result file could not be written (its content is kept in a fallback
// file named on stderr, or on stdout), 130 or 143 stopped by SIGINT or
// SIGTERM (finished results are written).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"

	"vitbench/bench/runner"

	_ "vitbench/impl/cpu"  // registers the "cpu" backend
	_ "vitbench/impl/cuda" // registers the "cuda" backend
)

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// usageError marks errors that are the caller's: bad flags, unreadable input.
type usageError struct{ error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) (int, error)
}

var commands = map[string]command{
	"list":    {"every case with kind, op kind, parameters and MACs", cmdList},
	"info":    {"machine, CPU features, ISA path and backends", cmdInfo},
	"check":   {"conformance of fixtures against their reference outputs", cmdCheck},
	"bench":   {"timing of built-in cases in Go benchmark format", cmdBench},
	"report":  {"paper-style Markdown from result files", cmdReport},
	"compare": {"A/B comparison of two timing files, gating regressions", cmdCompare},
	"peak":    {"fp32 FMA GFLOP/s and memory GB/s ceilings, 1 thread and all", cmdPeak},
	"pair":    {"vitbench against ONNX Runtime, sample by sample, with paired ratios", cmdPair},
	"pairs":   {"several pair runs' ratios side by side, lowest and median, against a target", cmdPairs},
	"run":     {"the main job: check, bench (with PyTorch) and report", cmdRun},
}

func main() {
	setMemoryLimit()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// setMemoryLimit makes the garbage collector work harder, instead of the process failing,
// as its heap nears the memory it may use (runner.MemoryLimit: physical memory, cgroup,
// rlimits), unless GOMEMLIMIT says otherwise.
func setMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if l := runner.MemoryLimit(); l > 0 {
		debug.SetMemoryLimit(l / 10 * 9)
	}
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "vitbench: unknown command %q\n", args[0])
		usage(stderr)
		return exitUsage
	}
	code, err := c.run(args[1:], stdout, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintf(stderr, "vitbench %s: %v\n", args[0], err)
		if isWriteFailure(err) {
			return exitWrite
		}
		var ue usageError
		if errors.As(err, &ue) {
			return exitUsage
		}
		if code == exitOK {
			return exitFail
		}
	}
	return code
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: vitbench <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'vitbench <command> -h' for its flags.")
}

// newFlags returns a flag set that reports errors instead of exiting.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("vitbench "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args and turns flag errors into usage errors.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	return nil
}

// splitList splits a comma-separated flag value.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
