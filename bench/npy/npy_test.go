package npy

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"codeberg.org/sbinet/npyio"
)

func want234() []float32 {
	out := make([]float32, 24)
	for i := range out {
		out[i] = float32(i)*0.5 - 3
	}
	return out
}

func equal(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// TestReadsNumPyFiles reads files written by NumPy 1.24 (testdata/).
func TestReadsNumPyFiles(t *testing.T) {
	for _, name := range []string{"arange_2x3x4.npy", "v2.npy"} {
		a, err := ReadNPY(filepath.Join("testdata", name), Limits{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(a.Shape) != 3 || a.Shape[0] != 2 || a.Shape[1] != 3 || a.Shape[2] != 4 || !equal(a.Data, want234()) {
			t.Errorf("%s: got shape %v data %v", name, a.Shape, a.Data)
		}
	}
	for _, name := range []string{"plain.npz", "compressed.npz"} {
		ar, err := OpenNPZ(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		x, err := ar.Read("x", Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if !equal(x.Data, want234()) {
			t.Errorf("%s: x = %v", name, x.Data)
		}
		ar.Close()
	}
	ar, _ := OpenNPZ("testdata/compressed.npz")
	defer ar.Close()
	s, err := ar.Read("s", Limits{})
	if err != nil || len(s.Shape) != 0 || len(s.Data) != 1 || s.Data[0] != 7 {
		t.Errorf("scalar: %v %v", s, err)
	}
	pl, _ := OpenNPZ("testdata/plain.npz")
	defer pl.Close()
	if !pl.Has("proj.weight") {
		t.Errorf("keys %v lack proj.weight", pl.Keys())
	}
}

// TestWriteRoundTrip writes with EncodeNPY and reads back with this package
// and, independently, with npyio.
func TestWriteRoundTrip(t *testing.T) {
	dir := t.TempDir()
	data := want234()
	p := filepath.Join(dir, "a.npy")
	if err := WriteNPY(p, []int{2, 3, 4}, data); err != nil {
		t.Fatal(err)
	}
	a, err := ReadNPY(p, Limits{})
	if err != nil || !equal(a.Data, data) {
		t.Fatalf("round trip: %v %v", a, err)
	}
	f, _ := os.Open(p)
	defer f.Close()
	r, err := npyio.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var got []float32
	if err := r.Read(&got); err != nil || !equal(got, data) || len(r.Header.Descr.Shape) != 3 {
		t.Fatalf("npyio read: %v %v %v", got, r.Header, err)
	}
	z := filepath.Join(dir, "a.npz")
	if err := WriteNPZ(z, map[string]*Array{"x": {Shape: []int{24}, Data: data}, "b.c": {Shape: []int{}, Data: []float32{1}}}); err != nil {
		t.Fatal(err)
	}
	ar, err := OpenNPZ(z)
	if err != nil {
		t.Fatal(err)
	}
	defer ar.Close()
	x, err := ar.Read("x", Limits{})
	if err != nil || !equal(x.Data, data) {
		t.Fatalf("npz round trip: %v %v", x, err)
	}
	if err := WriteNPY(filepath.Join(dir, "bad.npy"), []int{5}, data); err == nil {
		t.Error("shape/data mismatch accepted")
	}
}

func npyBytes(dict string, data []byte) []byte {
	var b bytes.Buffer
	b.Write(magic)
	b.Write([]byte{1, 0})
	binary.Write(&b, binary.LittleEndian, uint16(len(dict)))
	b.WriteString(dict)
	b.Write(data)
	return b.Bytes()
}

// TestHostileNPY: each bad file gives one error naming the file and the
// problem, without panicking or allocating what the header claims.
func TestHostileNPY(t *testing.T) {
	dir := t.TempDir()
	good, _ := os.ReadFile("testdata/arange_2x3x4.npy")
	cases := []struct {
		name, want string
		content    []byte
	}{
		{"empty", "too short", nil},
		{"badmagic", "bad magic", []byte("PK\x03\x04 not numpy at all")},
		{"truncated", "truncated", good[:len(good)-10]},
		{"trailing", "trailing bytes", append(append([]byte{}, good...), 1, 2, 3, 4)},
		{"hugeshape", "more than the limit", npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000, 1000), }\n", nil)},
		{"overflow", "too large", npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }\n", nil)},
		{"overflowprod", "overflows", npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2147483647, 2147483647, 2147483647), }\n", nil)},
		{"f64", "dtype <f8", mustRead(t, "testdata/f64.npy")},
		{"fortran", "Fortran", mustRead(t, "testdata/fortran.npy")},
		{"bigendian", "dtype >f4", npyBytes("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }\n", []byte{0, 0, 0, 0})},
		{"garbage", "bad .npy header", npyBytes("{'descr': '<f4', 'shape': [1, 2]}\n", nil)},
		{"missingkey", "missing key", npyBytes("{'descr': '<f4', 'shape': (1,), }\n", []byte{0, 0, 0, 0})},
		{"version", "unsupported .npy format version", append(append([]byte{}, magic...), 9, 0, 0, 0)},
		{"hdrlen", "header declares", append(append([]byte{}, magic...), 2, 0, 0xff, 0xff, 0xff, 0x7f)},
		{"shortdict", "truncated .npy header", append(append([]byte{}, magic...), 1, 0, 0xff, 0x00, '{')},
	}
	for _, c := range cases {
		p := filepath.Join(dir, c.name+".npy")
		os.WriteFile(p, c.content, 0o644)
		_, err := ReadNPY(p, Limits{MaxBytes: 1 << 30})
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %q lacks %q or the path", c.name, err, c.want)
		}
	}
}

// TestHostileNPZ covers archives: not a zip, a member that is not .npy,
// an escaping member name, a member whose data is cut short.
func TestHostileNPZ(t *testing.T) {
	dir := t.TempDir()
	notzip := filepath.Join(dir, "notzip.npz")
	os.WriteFile(notzip, []byte("hello"), 0o644)
	if _, err := OpenNPZ(notzip); err == nil || !strings.Contains(err.Error(), "not a valid .npz") {
		t.Errorf("not a zip: %v", err)
	}
	full, _ := os.ReadFile("testdata/plain.npz")
	cut := filepath.Join(dir, "cut.npz")
	os.WriteFile(cut, full[:len(full)/2], 0o644)
	if _, err := OpenNPZ(cut); err == nil || !strings.Contains(err.Error(), cut) {
		t.Errorf("cut archive: %v", err)
	}
	ar, err := OpenNPZ("testdata/plain.npz")
	if err != nil {
		t.Fatal(err)
	}
	defer ar.Close()
	if _, err := ar.Read("nope", Limits{}); err == nil || !strings.Contains(err.Error(), `no array "nope"`) {
		t.Errorf("missing array: %v", err)
	}
	if _, err := ar.Read("x", Limits{MaxBytes: 8}); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("budget: %v", err)
	}
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
