package main

import (
	"fmt"
	"strconv"
	"strings"
)

// maxRunBatch bounds `run -batch`: a batch past it is a typo, not a measurement.
const maxRunBatch = 1024

// parseBatches reads run's -batch list ("1,8"): the batch sizes every case is timed at, in
// order, each once. The empty list is one entry, 0: each case at its own batch.
func parseBatches(list string) ([]int, error) {
	if strings.TrimSpace(list) == "" {
		return []int{0}, nil
	}
	var out []int
	seen := map[int]bool{}
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > maxRunBatch {
			return nil, usagef("-batch %q: each entry must be a batch size from 1 to %d", list, maxRunBatch)
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out, nil
}

// batchArgs is the baseline scripts' flag for batch (bench_torch.py and onnx_export.py both
// take --batch); none for 0, each case's own.
func batchArgs(batch int) []string {
	if batch == 0 {
		return nil
	}
	return []string{"--batch", strconv.Itoa(batch)}
}

// batchNote is the progress header's mention of batch (nothing for each case's own).
func batchNote(batch int) string {
	if batch == 0 {
		return ""
	}
	return fmt.Sprintf(", batch %d", batch)
}
