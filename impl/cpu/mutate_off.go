//go:build !mutation

package cpu

import "vitbench/bench"

// mutate is the mutation hook of Enqueue (see mutate_on.go); production
// builds never call it: mutation.Enabled is the constant false.
func (b *Backend) mutate(bench.Node, []*tensor, []*tensor) (bool, error) { return false, nil }
