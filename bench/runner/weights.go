package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"vitbench/bench"
	"vitbench/bench/npy"
)

// NPZWeights returns a data source for Prepare that reads every weight of
// spec from the .npz archive at path (keys are the state_dict names, as
// reference/convert_checkpoint.py writes them) and synthesizes the inputs
// from seed. It checks the whole archive first and returns one error that
// lists every missing array and every shape mismatch; arrays the spec does
// not use are allowed (a checkpoint may hold more than one model part).
// The archive stays open for the reads; release closes it.
func NPZWeights(spec bench.Spec, path string, seed uint64, lim npy.Limits) (data func(group, name string) ([]float32, error), release func() error, err error) {
	ar, err := npy.OpenNPZ(path)
	if err != nil {
		return nil, nil, err
	}
	var problems []string
	for _, w := range spec.Weights() {
		if !ar.Has(w.Name) {
			problems = append(problems, fmt.Sprintf("missing %s %v", w.Name, w.Shape))
			continue
		}
		h, err := ar.Header(w.Name)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if !w.Shape.Equal(h.Shape) {
			problems = append(problems, fmt.Sprintf("%s has shape %v, the %s op needs %v", w.Name, bench.Shape(h.Shape), spec.Op(), w.Shape))
		}
	}
	if len(problems) > 0 {
		ar.Close()
		sort.Strings(problems)
		return nil, nil, fmt.Errorf("%s: %d weights do not fit:\n  %s", path, len(problems), strings.Join(problems, "\n  "))
	}
	inputs := SynthData(spec, seed)
	return func(group, name string) ([]float32, error) {
		if group != "weights" {
			return inputs(group, name)
		}
		a, err := ar.Read(name, lim)
		if err != nil {
			return nil, err
		}
		return a.Data, nil
	}, ar.Close, nil
}

// FileSHA256 returns the SHA-256 of the file at path in hex: the record of which weights a
// timing ran with.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %v", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
