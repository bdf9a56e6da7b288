package report

import (
	"fmt"
	"io"
)

// Markdown writes the paper-style report of in: header, conformance, components, networks,
// timing failures, hardware comparison, A/B, plots and sources. A section without data is
// left out, except the header and sources.
func Markdown(w io.Writer, in Input) error {
	es := in.entries()
	sections := []func(io.Writer, Input, []entry) error{
		writeHeader, writeConformance, writeComponents, writeNetworks, writeOrt, writeMemory, writeFailures, writeHardware, writeAB, writePlots,
		writeSources,
	}
	for _, s := range sections {
		if err := s(w, in, es); err != nil {
			return err
		}
	}
	return nil
}

// section writes a section heading and an optional explanatory line.
// Both are made safe for one line (Inline): a note may quote input files.
func section(w io.Writer, title, note string) {
	fmt.Fprintf(w, "\n## %s\n\n", Inline(title))
	if note != "" {
		fmt.Fprintf(w, "%s\n\n", Inline(note))
	}
}
