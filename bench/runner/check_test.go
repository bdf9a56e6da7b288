package runner_test

import (
	"testing"

	"vitbench/bench/cases"
	"vitbench/bench/fixture"
	"vitbench/bench/npy"
	"vitbench/bench/runner"
	"vitbench/impl/cpu"
)

// TestCommittedFixturesOnCPU checks every committed fixture but the large
// networks, on every ISA path this machine supports, with the manifest
// verified.
func TestCommittedFixturesOnCPU(t *testing.T) {
	root := "../../fixtures"
	dirs, err := fixture.Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 12 {
		t.Fatalf("only %d fixtures under %s", len(dirs), root)
	}
	man, err := fixture.ReadManifest(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, isa := range cpu.SupportedISAs() {
		t.Run(isa, func(t *testing.T) {
			if err := cpu.SetISA(isa); err != nil {
				t.Fatal(err)
			}
			defer cpu.SetISA(cpu.SupportedISAs()[0])
			b := cpu.New(2)
			for _, d := range dirs {
				// Under -short (the race-detector run) the networks, which
				// only repeat the component nodes, are left to the full run.
				if testing.Short() {
					if desc, err := fixture.ReadDesc(d); err == nil && desc.Kind == "network" {
						continue
					}
				}
				// The large networks (builtin.json "large") take minutes on the
				// Go path; ci/test.sh checks them with vitbench check on the
				// fastest path.
				if desc, err := fixture.ReadDesc(d); err == nil {
					if c, ok := cases.Lookup(desc.Name); ok && c.Large {
						continue
					}
				}
				row := runner.CheckFixture(b, d, runner.CheckOptions{Limits: npy.Limits{}, Root: root, Manifest: man})
				if row.Status != runner.OK {
					t.Errorf("%s: %s %s", d, row.Status, row.Reason)
				}
				if b.Memory().Current != 0 {
					t.Fatalf("%s: %d bytes still allocated after the check", d, b.Memory().Current)
				}
			}
		})
	}
}
