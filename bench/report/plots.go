package report

import (
	"fmt"
	"io"
)

// writePlots embeds the charts written beside the report (Input.Figures) as images with
// relative links, each followed by its caption, and lists in one line each the charts that
// were not drawn (Input.FigureNotes). The section is left out when there is neither.
func writePlots(w io.Writer, in Input, _ []entry) error {
	if len(in.Figures) == 0 && len(in.FigureNotes) == 0 {
		return nil
	}
	section(w, "Plots", "")
	for i, f := range in.Figures {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "![%s](%s)\n\n%s\n", Inline(f.Title), f.Path, Inline(f.Caption))
	}
	if len(in.Figures) > 0 && len(in.FigureNotes) > 0 {
		fmt.Fprintln(w)
	}
	for _, n := range in.FigureNotes {
		fmt.Fprintf(w, "- %s\n", Inline(n))
	}
	return nil
}
