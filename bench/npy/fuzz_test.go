package npy

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fuzzLimit is the array budget of the fuzz targets: small, so that a header
// that claims more than the input holds is refused before allocating.
const fuzzLimit = 1 << 20

// hostileNPY are the bad headers of TestHostileNPY and a few more, as seeds.
func hostileNPY() [][]byte {
	hdr := func(dict string, data ...byte) []byte { return npyBytes(dict, data) }
	return [][]byte{
		nil,
		[]byte("PK\x03\x04 not numpy at all"),
		hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000, 1000), }\n"),
		hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }\n"),
		hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (2147483647, 2147483647, 2147483647), }\n"),
		hdr("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }\n", 0, 0, 0, 0),
		hdr("{'descr': '<f4', 'shape': [1, 2]}\n"),
		hdr("{'descr': '<f4', 'shape': (1,), }\n", 0, 0, 0, 0),
		hdr("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }\n", 0, 0, 0, 0),
		hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (), }\n", 0, 0, 0x80, 0x7f),
		hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }\n"),
		hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'shape': (1,)}\n", 0, 0, 0, 0),
		hdr("{\"descr\": \"=f4\", \"fortran_order\": False, \"shape\": (1,)}", 1, 0, 0xc0, 0xff),
		hdr("{'descr': 'float32', 'fortran_order': False, 'shape': (2, 1,), }", 1, 2, 3, 4, 5, 6, 7, 8),
		hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (1"),
		hdr("{'descr': '<f4', 'fortran_order': Fals"),
		hdr("{'descr"),
		append(append([]byte{}, magic...), 9, 0, 0, 0),
		append(append([]byte{}, magic...), 2, 0, 0xff, 0xff, 0xff, 0x7f),
		append(append([]byte{}, magic...), 3, 0, 4, 0, 0, 0, '{', '}', ' ', '\n'),
		append(append([]byte{}, magic...), 1, 0, 0xff, 0x00, '{'),
	}
}

// FuzzReadNPY: ReadNPY never panics; what it accepts is consistent (data
// length = product of the shape, within the budget, equal to the file's
// trailing bytes) and survives EncodeNPY and a second read bit for bit.
func FuzzReadNPY(f *testing.F) {
	for _, name := range []string{"arange_2x3x4.npy", "v2.npy", "f64.npy", "fortran.npy"} {
		raw, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
		f.Add(raw[:len(raw)-4])
	}
	for _, b := range hostileNPY() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, "in.npy")
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		a, err := ReadNPY(p, Limits{MaxBytes: fuzzLimit})
		if err != nil {
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("error does not name the file: %v", err)
			}
			if a != nil {
				t.Fatalf("error %v with an array", err)
			}
			return
		}
		n := product(a.Shape)
		if n < 0 {
			t.Fatalf("shape %v has a negative dimension or overflows", a.Shape)
		}
		if int64(len(a.Data)) != n {
			t.Fatalf("shape %v holds %d values, read %d", a.Shape, n, len(a.Data))
		}
		if 4*n > fuzzLimit {
			t.Fatalf("shape %v needs %d bytes, over the %d-byte limit", a.Shape, 4*n, fuzzLimit)
		}
		// The data are the file's last 4n bytes, little-endian.
		tail := raw[len(raw)-int(4*n):]
		for i, v := range a.Data {
			if math.Float32bits(v) != binary.LittleEndian.Uint32(tail[4*i:]) {
				t.Fatalf("value %d is %#x, the file holds %#x", i, math.Float32bits(v), binary.LittleEndian.Uint32(tail[4*i:]))
			}
		}
		// Re-encode and read back: identical shape and bits.
		var buf bytes.Buffer
		if err := EncodeNPY(&buf, a.Shape, a.Data); err != nil {
			t.Fatalf("EncodeNPY of an array ReadNPY accepted: %v", err)
		}
		if buf.Len()%4 != 0 || (buf.Len()-4*int(n))%64 != 0 {
			t.Fatalf("EncodeNPY wrote %d bytes: header not padded to 64", buf.Len())
		}
		q := filepath.Join(dir, "again.npy")
		if err := os.WriteFile(q, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := ReadNPY(q, Limits{MaxBytes: fuzzLimit})
		if err != nil {
			t.Fatalf("reading back what EncodeNPY wrote: %v", err)
		}
		if !slices.Equal(a.Shape, b.Shape) || !equal(a.Data, b.Data) {
			t.Fatalf("round trip changed the array: shape %v -> %v", a.Shape, b.Shape)
		}
	})
}

// product is the element count of shape, computed independently of
// Header.Elems; -1 for a negative dimension or more than 2^62 elements.
func product(shape []int) int64 {
	p := new(big.Int).SetInt64(1)
	for _, d := range shape {
		if d < 0 {
			return -1
		}
		p.Mul(p, big.NewInt(int64(d)))
	}
	if p.Cmp(big.NewInt(1<<62)) > 0 {
		return -1
	}
	return p.Int64()
}

// zipOf builds an archive with the given members in order; deflate selects
// compression.
func zipOf(deflate bool, members ...string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := 0; i+1 < len(members); i += 2 {
		m := zip.Store
		if deflate {
			m = zip.Deflate
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: members[i], Method: m})
		if err != nil {
			panic(err)
		}
		w.Write([]byte(members[i+1]))
	}
	zw.Close()
	return buf.Bytes()
}

// FuzzOpenNPZ: OpenNPZ and Read of every key never panic; array names
// never hold a path separator; what Read accepts agrees with Header and
// fits the budget.
func FuzzOpenNPZ(f *testing.F) {
	for _, name := range []string{"plain.npz", "compressed.npz"} {
		raw, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
		f.Add(raw[:len(raw)/2])
	}
	good, err := os.ReadFile("testdata/arange_2x3x4.npy")
	if err != nil {
		f.Fatal(err)
	}
	g := string(good)
	f.Add(zipOf(false, "x.npy", g, "w.b.npy", g))
	f.Add(zipOf(true, "x.npy", g[:len(g)-8]))
	f.Add(zipOf(false, "../x.npy", g))
	f.Add(zipOf(false, "a/x.npy", g))
	f.Add(zipOf(false, `a\x.npy`, g))
	f.Add(zipOf(false, "x.npy", g, "x.npy", g))
	f.Add(zipOf(false, "x.txt", "hello"))
	f.Add(zipOf(false, ".npy", g))
	f.Add(zipOf(true, "big.npy", string(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000), }\n", nil))))
	f.Add([]byte("hello"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		p := filepath.Join(t.TempDir(), "in.npz")
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		ar, err := OpenNPZ(p)
		if err != nil {
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		defer ar.Close()
		for _, k := range ar.Keys() {
			if k == "" || strings.ContainsAny(k, `/\`) {
				t.Fatalf("array name %q is empty or holds a path separator", k)
			}
			if !ar.Has(k) {
				t.Fatalf("Keys lists %q, Has denies it", k)
			}
			h, herr := ar.Header(k)
			a, err := ar.Read(k, Limits{MaxBytes: fuzzLimit})
			if err != nil {
				// The array is named quoted (%q), so names with control or
				// non-UTF-8 bytes stay readable.
				if !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), fmt.Sprintf("%q", k)) {
					t.Fatalf("error does not name the file and the array: %v", err)
				}
				continue
			}
			if herr != nil {
				t.Fatalf("Read of %q succeeds, Header fails: %v", k, herr)
			}
			if !slices.Equal(h.Shape, a.Shape) {
				t.Fatalf("%q: Header shape %v, Read shape %v", k, h.Shape, a.Shape)
			}
			n := product(a.Shape)
			if n < 0 || 4*n > fuzzLimit || int64(len(a.Data)) != n {
				t.Fatalf("%q: shape %v, %d values read (limit %d bytes)", k, a.Shape, len(a.Data), fuzzLimit)
			}
		}
		if _, err := ar.Read("no such array", Limits{MaxBytes: fuzzLimit}); err == nil && !ar.Has("no such array") {
			t.Fatal("Read of a missing array succeeded")
		}
	})
}
