// Package npy reads NumPy .npy files and .npz archives of float32 arrays
// defensively: every header is parsed and checked (dtype, order, shape,
// size against the bytes actually present and against a memory budget)
// before anything is allocated, and every failure is an error that names
// the file, the array and what was expected. Writing goes through
// codeberg.org/sbinet/npyio (see write.go).
package npy

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Header is the parsed description of one .npy array.
type Header struct {
	Descr   string // e.g. "<f4"
	Fortran bool
	Shape   []int
	// DataOffset is the byte offset of the data from the start of the .npy.
	DataOffset int64
}

// Elems is the number of elements the shape declares, or -1 on overflow.
func (h Header) Elems() int64 {
	n := int64(1)
	for _, d := range h.Shape {
		if d < 0 || (d != 0 && n > math.MaxInt64/int64(d)) {
			return -1
		}
		n *= int64(d)
	}
	return n
}

// maxHeaderLen bounds the header dictionary; NumPy itself writes < 1 KiB.
const maxHeaderLen = 1 << 16

var magic = []byte("\x93NUMPY")

// ReadHeader parses the magic, version and header dictionary of a .npy
// stream, reading no further.
func ReadHeader(r io.Reader) (Header, error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return Header{}, fmt.Errorf("not a .npy file: too short for the magic string (%v)", err)
	}
	if !bytes.Equal(pre[:6], magic) {
		return Header{}, fmt.Errorf("not a .npy file: bad magic string %q", pre[:6])
	}
	major := pre[6]
	var hlen int64
	var off int64
	switch major {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return Header{}, fmt.Errorf("truncated .npy header length: %v", err)
		}
		hlen, off = int64(binary.LittleEndian.Uint16(b[:])), 10
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return Header{}, fmt.Errorf("truncated .npy header length: %v", err)
		}
		hlen, off = int64(binary.LittleEndian.Uint32(b[:])), 12
	default:
		return Header{}, fmt.Errorf("unsupported .npy format version %d.%d (want 1.x, 2.x or 3.x)", major, pre[7])
	}
	if hlen > maxHeaderLen {
		return Header{}, fmt.Errorf(".npy header declares %d bytes of dictionary (limit %d)", hlen, maxHeaderLen)
	}
	buf := make([]byte, hlen)
	if _, err := io.ReadFull(r, buf); err != nil {
		return Header{}, fmt.Errorf("truncated .npy header: %v", err)
	}
	h, err := parseDict(string(buf))
	if err != nil {
		return Header{}, fmt.Errorf("bad .npy header %q: %v", strings.TrimSpace(string(buf)), err)
	}
	h.DataOffset = off + hlen
	return h, nil
}

// parseDict parses the Python literal NumPy writes:
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
func parseDict(s string) (Header, error) {
	p := &lit{s: s}
	var h Header
	seen := map[string]bool{}
	p.space()
	if !p.eat('{') {
		return h, fmt.Errorf("want '{'")
	}
	for {
		p.space()
		if p.eat('}') {
			break
		}
		k, err := p.str()
		if err != nil {
			return h, err
		}
		p.space()
		if !p.eat(':') {
			return h, fmt.Errorf("want ':' after key %q", k)
		}
		p.space()
		if seen[k] {
			return h, fmt.Errorf("key %q given twice", k)
		}
		seen[k] = true
		switch k {
		case "descr":
			if h.Descr, err = p.str(); err != nil {
				return h, err
			}
		case "fortran_order":
			switch {
			case p.word("True"):
				h.Fortran = true
			case p.word("False"):
			default:
				return h, fmt.Errorf("fortran_order must be True or False")
			}
		case "shape":
			if h.Shape, err = p.tuple(); err != nil {
				return h, err
			}
		default:
			return h, fmt.Errorf("unexpected key %q", k)
		}
		p.space()
		if !p.eat(',') {
			p.space()
			if !p.eat('}') {
				return h, fmt.Errorf("want ',' or '}' after %q", k)
			}
			break
		}
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return h, fmt.Errorf("missing key %q", k)
		}
	}
	return h, nil
}

type lit struct {
	s string
	i int
}

func (p *lit) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n') {
		p.i++
	}
}

func (p *lit) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *lit) word(w string) bool {
	if strings.HasPrefix(p.s[p.i:], w) {
		p.i += len(w)
		return true
	}
	return false
}

func (p *lit) str() (string, error) {
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", fmt.Errorf("want a quoted string at offset %d", p.i)
	}
	q := p.s[p.i]
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", fmt.Errorf("unterminated string at offset %d", p.i)
	}
	v := p.s[p.i+1 : p.i+1+end]
	p.i += end + 2
	return v, nil
}

func (p *lit) tuple() ([]int, error) {
	if !p.eat('(') {
		return nil, fmt.Errorf("shape must be a tuple")
	}
	shape := []int{}
	for {
		p.space()
		if p.eat(')') {
			return shape, nil
		}
		j := p.i
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		if j == p.i {
			return nil, fmt.Errorf("shape holds a non-integer at offset %d", p.i)
		}
		d, err := strconv.ParseInt(p.s[p.i:j], 10, 64)
		if err != nil || d > math.MaxInt32 {
			return nil, fmt.Errorf("shape dimension %s is too large", p.s[p.i:j])
		}
		shape = append(shape, int(d))
		p.i = j
		p.space()
		if !p.eat(',') {
			p.space()
			if !p.eat(')') {
				return nil, fmt.Errorf("want ',' or ')' in shape")
			}
			return shape, nil
		}
	}
}
