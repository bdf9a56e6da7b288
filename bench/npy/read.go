package npy

import (
	"archive/zip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// DefaultMaxBytes is the default budget for one array's data: 4 GiB.
const DefaultMaxBytes = 4 << 30

// Limits bounds what a reader will allocate.
type Limits struct {
	// MaxBytes is the largest array (in bytes of float32 data) accepted;
	// 0 means DefaultMaxBytes.
	MaxBytes int64
}

func (l Limits) max() int64 {
	if l.MaxBytes <= 0 {
		return DefaultMaxBytes
	}
	return l.MaxBytes
}

// Array is a float32 array read from disk.
type Array struct {
	Shape []int
	Data  []float32
}

// checkHeader validates a header for float32 C-order data of at most
// limits bytes with avail bytes of data present (avail < 0: unknown).
func checkHeader(h Header, avail int64, lim Limits) (int64, error) {
	if h.Descr != "<f4" && h.Descr != "=f4" && h.Descr != "float32" {
		return 0, fmt.Errorf("dtype %s, expected <f4 (float32, little-endian)", h.Descr)
	}
	if h.Fortran {
		return 0, fmt.Errorf("Fortran (column-major) order, expected C order (use np.ascontiguousarray)")
	}
	n := h.Elems()
	if n < 0 || n > math.MaxInt64/4 {
		return 0, fmt.Errorf("shape %v overflows", h.Shape)
	}
	if n*4 > lim.max() {
		return 0, fmt.Errorf("shape %v needs %d bytes, more than the limit of %d bytes (raise it with -max-array-bytes)", h.Shape, n*4, lim.max())
	}
	if avail >= 0 && avail < n*4 {
		return 0, fmt.Errorf("truncated: shape %v needs %d bytes of data, the file holds %d", h.Shape, n*4, avail)
	}
	if avail > n*4 {
		return 0, fmt.Errorf("shape %v needs %d bytes of data, the file holds %d (trailing bytes)", h.Shape, n*4, avail)
	}
	return n, nil
}

// readData reads n little-endian float32 values.
func readData(r io.Reader, n int64) ([]float32, error) {
	data := make([]float32, n)
	buf := make([]byte, 1<<16)
	for i := int64(0); i < n; {
		chunk := min(int64(len(buf)/4), n-i)
		if _, err := io.ReadFull(r, buf[:chunk*4]); err != nil {
			return nil, fmt.Errorf("truncated data after %d of %d values: %v", i, n, err)
		}
		for j := int64(0); j < chunk; j++ {
			data[i+j] = math.Float32frombits(binary.LittleEndian.Uint32(buf[j*4:]))
		}
		i += chunk
	}
	return data, nil
}

// ReadNPY reads one float32 .npy file.
func ReadNPY(path string, lim Limits) (*Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	h, err := ReadHeader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	n, err := checkHeader(h, st.Size()-h.DataOffset, lim)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	data, err := readData(f, n)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &Array{Shape: h.Shape, Data: data}, nil
}

// Archive is an open .npz file.
type Archive struct {
	path    string
	zr      *zip.ReadCloser
	members map[string]*zip.File
}

// OpenNPZ opens an .npz archive and indexes its members by array name (the
// member name without ".npy"). Members that are not .npy files, duplicate
// names and names with path separators are errors.
func OpenNPZ(path string) (*Archive, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		if errors.Is(err, zip.ErrFormat) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%s: not a valid .npz (zip) archive: %v", path, err)
		}
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	a := &Archive{path: path, zr: zr, members: map[string]*zip.File{}}
	for _, f := range zr.File {
		name, ok := strings.CutSuffix(f.Name, ".npy")
		if !ok || name == "" || strings.ContainsAny(name, "/\\") || name == ".." {
			zr.Close()
			return nil, fmt.Errorf("%s: member %q is not a plain <name>.npy array", path, f.Name)
		}
		if _, dup := a.members[name]; dup {
			zr.Close()
			return nil, fmt.Errorf("%s: array %q appears twice", path, name)
		}
		a.members[name] = f
	}
	return a, nil
}

// Close closes the archive.
func (a *Archive) Close() error { return a.zr.Close() }

// Path is the archive's file name.
func (a *Archive) Path() string { return a.path }

// Keys lists the array names, sorted.
func (a *Archive) Keys() []string {
	keys := make([]string, 0, len(a.members))
	for k := range a.members {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Has reports whether the archive holds array name.
func (a *Archive) Has(name string) bool { _, ok := a.members[name]; return ok }

// Header returns the parsed header of array name without reading its data.
func (a *Archive) Header(name string) (Header, error) {
	f, ok := a.members[name]
	if !ok {
		return Header{}, fmt.Errorf("%s: no array %q (has %v)", a.path, name, a.Keys())
	}
	rc, err := f.Open()
	if err != nil {
		return Header{}, fmt.Errorf("%s: array %q: %v", a.path, name, err)
	}
	defer rc.Close()
	h, err := ReadHeader(rc)
	if err != nil {
		return Header{}, fmt.Errorf("%s: array %q: %v", a.path, name, err)
	}
	return h, nil
}

// Read reads array name, checking its header against the bytes the archive
// says the member holds and against lim before allocating.
func (a *Archive) Read(name string, lim Limits) (*Array, error) {
	f, ok := a.members[name]
	if !ok {
		return nil, fmt.Errorf("%s: no array %q (has %v)", a.path, name, a.Keys())
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%s: array %q: %v", a.path, name, err)
	}
	defer rc.Close()
	h, err := ReadHeader(rc)
	if err != nil {
		return nil, fmt.Errorf("%s: array %q: %v", a.path, name, err)
	}
	avail := int64(-1)
	if f.UncompressedSize64 <= math.MaxInt64 {
		avail = int64(f.UncompressedSize64) - h.DataOffset
	}
	n, err := checkHeader(h, avail, lim)
	if err != nil {
		return nil, fmt.Errorf("%s: array %q: %v", a.path, name, err)
	}
	data, err := readData(rc, n)
	if err != nil {
		return nil, fmt.Errorf("%s: array %q: %v", a.path, name, err)
	}
	// Drain to EOF so the zip reader verifies the CRC.
	if _, err := io.Copy(io.Discard, rc); err != nil {
		return nil, fmt.Errorf("%s: array %q: %v", a.path, name, err)
	}
	return &Array{Shape: h.Shape, Data: data}, nil
}

// Base returns the archive name without directories, for short messages.
func (a *Archive) Base() string { return filepath.Base(a.path) }
