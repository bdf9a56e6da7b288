package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"vitbench/bench/safeio"
)

// MaxFileBytes bounds a result file vitbench reads: real ones are a few megabytes.
const MaxFileBytes = 256 << 20

// readFile reads a result file: a regular file (a FIFO or device is an error naming it) of
// at most MaxFileBytes.
func readFile(path string) ([]byte, error) { return safeio.ReadFile(path, MaxFileBytes) }

// ReadBench reads a timing file, JSON or Go benchmark format (detected from the first
// non-blank byte: '{' means JSON). See readBenchText for how text is mapped to rows. Every
// sample must be a positive, finite number of nanoseconds and every row unique (validRow):
// anything else is an error naming the file and line.
func ReadBench(path string) (BenchFile, error) {
	data, err := readFile(path)
	if err != nil {
		return BenchFile{}, err
	}
	return parseBench(data, path)
}

// ReadCheck reads a conformance JSON file. Every row must have a known status (OK, FAIL or
// NS) and be the only one of its case, backend and dtype: anything else is an error naming
// the file and line.
func ReadCheck(path string) (CheckFile, error) {
	data, err := readFile(path)
	if err != nil {
		return CheckFile{}, err
	}
	if !isJSON(data) {
		return CheckFile{}, fmt.Errorf("%s: not a JSON conformance file", path)
	}
	meta, rows, err := decodeJSONFile[CheckRow](data, path, nil)
	return CheckFile{Meta: meta, Rows: rows}, err
}

// ReadAny reads a timing or a conformance file, whichever path holds: JSON whose first row
// has a "status" field is a conformance file; other JSON and text are timing files. A JSON
// file with no rows reads as an empty timing file. Exactly one of bench and check is non-nil
// when err is nil.
func ReadAny(path string) (bench *BenchFile, check *CheckFile, err error) {
	data, err := readFile(path)
	if err != nil {
		return nil, nil, err
	}
	if isJSON(data) && isCheckJSON(data) {
		meta, rows, err := decodeJSONFile[CheckRow](data, path, nil)
		if err != nil {
			return nil, nil, err
		}
		return nil, &CheckFile{Meta: meta, Rows: rows}, nil
	}
	f, err := parseBench(data, path)
	if err != nil {
		return nil, nil, err
	}
	return &f, nil, nil
}

// parseBench parses a timing file held in data.
func parseBench(data []byte, path string) (BenchFile, error) {
	if isJSON(data) {
		var failed []BenchFailure
		meta, rows, err := decodeJSONFile[BenchRow](data, path, &failed)
		return BenchFile{Meta: meta, Rows: rows, Failed: failed}, err
	}
	return readBenchText(data, path)
}

// isJSON reports whether data's first non-blank byte is '{'.
func isJSON(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n\ufeff")
	return len(t) > 0 && t[0] == '{'
}

// isCheckJSON reports whether the first row of a JSON result file has a "status" field.
// Malformed JSON answers false; the timing decoder then reports where it is malformed.
func isCheckJSON(data []byte) bool {
	var probe struct {
		Rows []map[string]json.RawMessage `json:"rows"`
	}
	if json.Unmarshal(data, &probe) != nil || len(probe.Rows) == 0 {
		return false
	}
	_, ok := probe.Rows[0]["status"]
	return ok
}

// decodeJSONFile decodes {"meta": {...}, "rows": [...]}, row by row so that an error names
// the line of the value at fault, and the timing file's "failed" list into failed when it
// is not nil. Unknown top-level fields are skipped. Each row must pass its own check (see
// validRow) and have a key no earlier row has; the error names the line of the row.
func decodeJSONFile[R validRow](data []byte, path string, failed *[]BenchFailure) (Meta, []R, error) {
	var meta Meta
	rows := []R{}
	lineOf := map[string]int{} // row key -> line of the row
	dec := json.NewDecoder(bytes.NewReader(data))
	fail := func(off int64, err error) error {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			off += se.Offset
		case errors.As(err, &te):
			off += te.Offset
		}
		return fmt.Errorf("%s:%d: %w", path, lineAt(data, off), err)
	}
	if err := expectDelim(dec, '{'); err != nil {
		return meta, nil, fail(0, err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return meta, nil, fail(0, err)
		}
		key, _ := tok.(string)
		switch key {
		case "meta":
			var raw json.RawMessage
			off := dec.InputOffset()
			if err := dec.Decode(&raw); err != nil {
				return meta, nil, fail(0, err)
			}
			if err := json.Unmarshal(raw, &meta); err != nil {
				return meta, nil, fail(skipSep(data, off), err)
			}
		case "rows":
			if err := expectDelim(dec, '['); err != nil {
				return meta, nil, fail(dec.InputOffset(), err)
			}
			for dec.More() {
				off := dec.InputOffset()
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					return meta, nil, fail(0, err)
				}
				var r R
				if err := json.Unmarshal(raw, &r); err != nil {
					return meta, nil, fail(skipSep(data, off), fmt.Errorf("row %d: %w", len(rows), err))
				}
				start := skipSep(data, off)
				if err := r.check(); err != nil {
					return meta, nil, fail(start, fmt.Errorf("row %d (%s): %w", len(rows), r.key(), err))
				}
				if prev, dup := lineOf[r.key()]; dup {
					return meta, nil, fail(start, fmt.Errorf("row %d (%s): a second row for the same key (the first is at line %d)", len(rows), r.key(), prev))
				}
				lineOf[r.key()] = lineAt(data, start)
				rows = append(rows, r)
			}
			if _, err := dec.Token(); err != nil {
				return meta, nil, fail(0, err)
			}
		case "failed":
			var raw json.RawMessage
			off := dec.InputOffset()
			if err := dec.Decode(&raw); err != nil {
				return meta, nil, fail(0, err)
			}
			if failed != nil {
				if err := json.Unmarshal(raw, failed); err != nil {
					return meta, nil, fail(skipSep(data, off), fmt.Errorf("failed: %w", err))
				}
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return meta, nil, fail(0, err)
			}
		}
	}
	return meta, rows, nil
}

// expectDelim reads the next token and checks that it is the delimiter d.
func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != d {
		return fmt.Errorf("want %q, got %v", d, tok)
	}
	return nil
}

// skipSep returns the offset of the first byte at or after off that is not blank, ',' or ':'.
func skipSep(data []byte, off int64) int64 {
	for off < int64(len(data)) {
		switch data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

// lineAt returns the 1-based line of byte offset off in data.
func lineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return 1 + bytes.Count(data[:off], []byte("\n"))
}
