package main

import (
	"flag"
	"os"
	"strings"

	"vitbench/bench/report"
	vcpu "vitbench/impl/cpu"
)

// machineFlag registers -machine on fs.
func machineFlag(fs *flag.FlagSet) *string {
	return fs.String("machine", "", "name of the machine the results were measured on, for the report's header and hardware table (default: host name and CPU model, e.g. \"ci-1 (Intel Xeon …)\")")
}

// localMachine names this machine: its host name and CPU model, "host (CPU)", or whichever
// of the two is known.
func localMachine() string {
	host, _ := os.Hostname()
	host, model := strings.TrimSpace(host), strings.TrimSpace(vcpu.CPUModel())
	switch {
	case host == "":
		return model
	case model == "":
		return host
	}
	return host + " (" + model + ")"
}

// fillMachines names the machine of every result file of in that does not name one. With
// name (-machine given, or `run`, whose files are all measured here), every such file gets
// name. Without it, a file gets the machine of another loaded file with the same CPU (files
// measured together, such as bench.txt and torch.txt), else localMachine when its CPU is
// this machine's or not recorded; a file from a CPU not seen here keeps its CPU as the name.
func fillMachines(in *report.Input, name string) {
	metas := make([]*string, 0, len(in.Bench)+len(in.Check))
	cpus := make([]string, 0, cap(metas))
	for i := range in.Bench {
		metas, cpus = append(metas, &in.Bench[i].Meta.Machine), append(cpus, in.Bench[i].Meta.CPU)
	}
	for i := range in.Check {
		metas, cpus = append(metas, &in.Check[i].Meta.Machine), append(cpus, in.Check[i].Meta.CPU)
	}
	if name != "" {
		for _, m := range metas {
			if *m == "" {
				*m = name
			}
		}
		return
	}
	named := map[string]string{} // CPU -> the first machine name a file with that CPU gives
	for i, m := range metas {
		if *m != "" && cpus[i] != "" && named[cpus[i]] == "" {
			named[cpus[i]] = *m
		}
	}
	local := vcpu.CPUModel()
	for i, m := range metas {
		switch {
		case *m != "":
		case named[cpus[i]] != "" && cpus[i] != "":
			*m = named[cpus[i]]
		case cpus[i] == "" || strings.TrimSpace(cpus[i]) == strings.TrimSpace(local):
			*m = localMachine()
		}
	}
}
