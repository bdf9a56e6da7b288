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

	"vitbench/bench/safeio"
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

// ReadNPY reads one float32 .npy file. Only a regular file is read (a FIFO
// or device is an error naming path); its size comes from the opened file.
func ReadNPY(path string, lim Limits) (*Array, error) {
	f, st, err := safeio.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
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
	file    *os.File
	zr      *zip.Reader
	members map[string]*zip.File
}

// OpenNPZ opens an .npz archive and indexes its members by array name (the
// member name without ".npy"). Members that are not .npy files, duplicate
// names and names with path separators are errors. Only a regular file is
// opened (a FIFO or device is an error naming path), and the zip directory
// is read against the size of the opened file.
func OpenNPZ(path string) (*Archive, error) {
	f, st, err := safeio.Open(path)
	if err != nil {
		return nil, err
	}
	zr, err := zip.NewReader(f, st.Size())
	if err != nil {
		f.Close()
		if errors.Is(err, zip.ErrFormat) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%s: not a valid .npz (zip) archive: %v", path, err)
		}
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	a := &Archive{path: path, file: f, zr: zr, members: map[string]*zip.File{}}
	for _, zf := range zr.File {
		name, ok := strings.CutSuffix(zf.Name, ".npy")
		if !ok || name == "" || strings.ContainsAny(name, "/\\") || name == ".." {
			f.Close()
			return nil, fmt.Errorf("%s: member %q is not a plain <name>.npy array", path, zf.Name)
		}
		if _, dup := a.members[name]; dup {
			f.Close()
			return nil, fmt.Errorf("%s: array %q appears twice", path, name)
		}
		a.members[name] = zf
	}
	return a, nil
}

// Close closes the archive.
func (a *Archive) Close() error { return a.file.Close() }

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
	// The member's declared size must be exactly the header plus the data
	// its shape needs: a member declaring more (up to 2^64-1 bytes, as a
	// zip64 bomb does) is refused before anything is inflated.
	if f.UncompressedSize64 > math.MaxInt64 || int64(f.UncompressedSize64) < h.DataOffset {
		return nil, fmt.Errorf("%s: array %q: the archive declares %d uncompressed bytes for the member, not the %d-byte header plus its data",
			a.path, name, f.UncompressedSize64, h.DataOffset)
	}
	n, err := checkHeader(h, int64(f.UncompressedSize64)-h.DataOffset, lim)
	if err != nil {
		return nil, fmt.Errorf("%s: array %q: %v", a.path, name, err)
	}
	data, err := readData(rc, n)
	if err != nil {
		return nil, fmt.Errorf("%s: array %q: %v", a.path, name, err)
	}
	// Read to EOF so that the zip reader verifies the CRC and the size; the
	// data is complete, so at most one more byte is read: a member that
	// inflates past its declared size is an error, not inflated further.
	if err := expectEOF(rc); err != nil {
		return nil, fmt.Errorf("%s: array %q: %v", a.path, name, err)
	}
	return &Array{Shape: h.Shape, Data: data}, nil
}

// expectEOF reads from r, which should hold nothing more, until EOF; a byte
// is an error, and so is the reader's own complaint at EOF (a bad CRC).
func expectEOF(r io.Reader) error {
	var one [1]byte
	for tries := 0; tries < 100; tries++ {
		n, err := r.Read(one[:])
		if n > 0 {
			return fmt.Errorf("the member holds more data than its header's shape needs")
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("no end of the member after the data")
}

// Base returns the archive name without directories, for short messages.
func (a *Archive) Base() string { return filepath.Base(a.path) }
