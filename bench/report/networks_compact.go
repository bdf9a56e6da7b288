package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
)

// writeNetworkSummary writes the compact table papers print, one row per network and
// backend, families in familyOrder (ViT and DeiT first), cases by name within one: model, image size, params (M), GMACs per image, agreement with the reference
// (status and top-1, without the NMSE), batch-1 median latency, img/s at the largest batch
// measured (batch / median, the batch said when it is not 1), the speed-up over PyTorch at
// that batch and the code PyTorch ran (a marker, spelled out under the table for every batch
// of the detailed table too). The machine
// and backend columns appear only when the rows span several.
func writeNetworkSummary(w io.Writer, in Input, es []entry, groups []*netGroup, codes *baselineCodes) error {
	multiMachine := machineCount(es) > 1
	var backends []string
	for _, g := range groups {
		backends = appendNew(backends, g.first.Backend)
	}
	multiBackend := len(backends) > 1
	withOrt := in.hasOrt(es)
	// Families in the order papers list them (familyOrder), as the throughput chart does.
	groups = slices.Clone(groups)
	slices.SortStableFunc(groups, func(a, b *netGroup) int {
		fa, fb := in.opOf(a.first.Case), in.opOf(b.first.Case)
		return cmp.Or(cmp.Compare(familyRank(fa), familyRank(fb)), cmp.Compare(fa, fb))
	})
	var cells [][]string
	var codeCells []string
	for _, g := range groups {
		info := in.Cases[g.first.Case]
		lat := dash
		if i := slices.IndexFunc(g.rows, func(e entry) bool { return e.Batch == 1 }); i >= 0 {
			lat = fmtMs(g.rows[i].MedianNs) + loadMark(g.rows[i].BenchRow)
		}
		last := g.rows[len(g.rows)-1] // rows are in ascending batch
		rate := imgPerSec(last.Batch, last.MedianNs)
		if last.Batch != 1 && rate != dash {
			rate += fmt.Sprintf(" (batch %d)", last.Batch)
		}
		vs, code := dash, dash
		if t, ok := torchFor(es, last); ok {
			vs, code = speedupCell(t, last), codes.mark(t)
		}
		gmacs := info.MACs
		if gmacs == 0 {
			gmacs = g.rows[0].MACs / int64(max(g.rows[0].Batch, 1))
		}
		row := []string{g.first.Case}
		if multiBackend {
			row = append(row, g.first.Backend)
		}
		row = append(row, orDash(info.ImgSize), millions(info.Params), billions(gmacs),
			shortAgreement(in.agreement(g.first.Case, g.first.Backend, g.first.DType)), lat, rate, vs, code)
		if withOrt {
			_, vsOrt := ortCells(in, es, last)
			row = append(row, vsOrt)
		}
		if multiMachine {
			row = append([]string{g.first.machine}, row...)
		}
		cells = append(cells, row)
		// The legend covers every batch, for the detailed table below too.
		for _, e := range g.rows {
			if t, ok := torchFor(es, e); ok {
				codeCells = append(codeCells, codes.mark(t))
			}
		}
	}
	header := []string{"model"}
	align := "l"
	if multiBackend {
		header, align = append(header, "backend"), align+"l"
	}
	header = append(header, "image size", "params (M)", "GMACs", "agreement", "batch-1 ms", "img/s", "vs PyTorch", "PyTorch code")
	align += "rrrlrrrl"
	if withOrt {
		header, align = append(header, "vs ORT"), align+"r"
	}
	if multiMachine {
		header, align = append([]string{"machine"}, header...), "l"+align
	}
	fmt.Fprintf(w, "### At a glance\n\nBatch-1 median latency; img/s and vs PyTorch at the largest batch measured for the model.\n\n")
	if err := writeTable(w, align, header, cells); err != nil {
		return err
	}
	codes.writeLegend(w, codeCells)
	return nil
}

// shortAgreement drops the NMSE from an agreement summary ("OK, NMSE 2.55e-12, top-1 same"
// becomes "OK, top-1 same"): the detailed table gives it.
func shortAgreement(s string) string {
	var keep []string
	for _, part := range strings.Split(s, ", ") {
		if !strings.HasPrefix(part, "NMSE ") {
			keep = append(keep, part)
		}
	}
	return strings.Join(keep, ", ")
}
