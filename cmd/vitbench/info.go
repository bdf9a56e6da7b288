package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"

	"golang.org/x/sys/cpu"

	"vitbench/bench"
	vcpu "vitbench/impl/cpu"
	"vitbench/impl/cuda"
)

// machineInfo is the output of `vitbench info`.
type machineInfo struct {
	CPU         string       `json:"cpu"`
	LogicalCPUs int          `json:"logical_cpus"`
	GOMAXPROCS  int          `json:"gomaxprocs"`
	GOOS        string       `json:"goos"`
	GOARCH      string       `json:"goarch"`
	Features    []string     `json:"cpu_features"`
	ISA         string       `json:"isa"`
	ISAPaths    []string     `json:"isa_paths"`
	Backends    []bench.Info `json:"backends"`
	// CUDALibraries says which NVRTC and cuBLAS the CUDA backend finds, or
	// why none, even without a driver or GPU.
	CUDALibraries []string `json:"cuda_libraries"`
	Commit        string   `json:"commit"`
}

func cpuFeatures() []string {
	var f []string
	add := func(ok bool, name string) {
		if ok {
			f = append(f, name)
		}
	}
	x := cpu.X86
	add(x.HasAVX, "avx")
	add(x.HasAVX2, "avx2")
	add(x.HasFMA, "fma")
	add(x.HasF16C, "f16c")
	add(x.HasAVX512F, "avx512f")
	add(x.HasAVX512BW, "avx512bw")
	add(x.HasAVX512VL, "avx512vl")
	add(x.HasAVX512VNNI, "avx512vnni")
	add(x.HasAVX512BF16, "avx512bf16")
	add(x.HasAMXTile, "amx-tile")
	add(x.HasAMXBF16, "amx-bf16")
	return f
}

func gatherInfo() machineInfo {
	mi := machineInfo{
		CPU: vcpu.CPUModel(), LogicalCPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, Features: cpuFeatures(),
		ISA: vcpu.ISA(), ISAPaths: vcpu.SupportedISAs(), Commit: commit(), CUDALibraries: cuda.Libraries(),
	}
	for _, name := range bench.BackendNames() {
		b, err := bench.OpenBackend(name, 0)
		if err != nil {
			mi.Backends = append(mi.Backends, bench.Info{Name: name, Reason: err.Error()})
			continue
		}
		mi.Backends = append(mi.Backends, b.Info())
		b.Close()
	}
	return mi
}

func cmdInfo(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("info", stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return exitUsage, err
	}
	mi := gatherInfo()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return exitOK, enc.Encode(mi)
	}
	fmt.Fprintf(stdout, "cpu:        %s (%d logical CPUs, GOMAXPROCS %d, %s/%s)\n", mi.CPU, mi.LogicalCPUs, mi.GOMAXPROCS, mi.GOOS, mi.GOARCH)
	fmt.Fprintf(stdout, "features:   %s\n", strings.Join(mi.Features, " "))
	fmt.Fprintf(stdout, "isa path:   %s (available: %s)\n", mi.ISA, strings.Join(mi.ISAPaths, ", "))
	fmt.Fprintf(stdout, "commit:     %s\n", mi.Commit)
	fmt.Fprintln(stdout, "backends:")
	for _, b := range mi.Backends {
		if !b.Available {
			fmt.Fprintf(stdout, "  %-9s unavailable: %s\n", b.Name, b.Reason)
			continue
		}
		var det []string
		for _, k := range sortedKeys(b.Details) {
			det = append(det, k+"="+b.Details[k])
		}
		fmt.Fprintf(stdout, "  %-9s %s [%s]\n", b.Name, b.Device, strings.Join(det, " "))
	}
	for _, l := range mi.CUDALibraries {
		fmt.Fprintf(stdout, "cuda libs:  %s\n", l)
	}
	return exitOK, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}
