package main

import (
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// newTable returns a Markdown table with the given headers, shown as typed.
func newTable(w io.Writer, headers ...string) *tablewriter.Table {
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewMarkdown()),
		tablewriter.WithHeaderAutoFormat(tw.Off),
	)
	h := make([]any, len(headers))
	for i, s := range headers {
		h[i] = s
	}
	t.Header(h...)
	return t
}
