package synth

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// vectors mirrors fixtures/synth_vectors.json, written by the scalar Python
// implementation in reference/make_synth_vectors.py.
type vectors struct {
	FNV []struct {
		Name string `json:"name"`
		Sum  string `json:"fnv1a64"`
	} `json:"fnv1a64"`
	Mix []struct {
		In  string `json:"in"`
		Out string `json:"out"`
	} `json:"mix64"`
	Vectors []struct {
		Seed   uint64   `json:"seed"`
		Name   string   `json:"name"`
		Shape  []int    `json:"shape"`
		Center float64  `json:"center"`
		Scale  float64  `json:"scale"`
		Key    string   `json:"key"`
		Stream string   `json:"stream"`
		First  []string `json:"first"`
		At     [][2]any `json:"at"`
		SHA256 string   `json:"sha256_f32le"`
	} `json:"vectors"`
}

func hex64(t *testing.T, s string) uint64 {
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		t.Fatalf("bad hex %q", s)
	}
	return v
}

// TestCrossLanguageVectors checks bit-identity with the Python generator.
func TestCrossLanguageVectors(t *testing.T) {
	raw, err := os.ReadFile("../../fixtures/synth_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	if len(v.Vectors) < 10 || len(v.FNV) == 0 || len(v.Mix) == 0 {
		t.Fatalf("too few vectors: %d %d %d", len(v.Vectors), len(v.FNV), len(v.Mix))
	}
	for _, f := range v.FNV {
		if got := key(f.Name); got != hex64(t, f.Sum) {
			t.Errorf("key(%q) = %#x, want %s", f.Name, got, f.Sum)
		}
	}
	for _, m := range v.Mix {
		if got := mix64(hex64(t, m.In)); got != hex64(t, m.Out) {
			t.Errorf("mix64(%s) = %#x, want %s", m.In, got, m.Out)
		}
	}
	for _, vec := range v.Vectors {
		if key(vec.Name) != hex64(t, vec.Key) {
			t.Errorf("%q: key mismatch", vec.Name)
		}
		s := New(vec.Seed, vec.Name, Params{Center: vec.Center, Scale: vec.Scale})
		if s.state != hex64(t, vec.Stream) {
			t.Errorf("%q seed %d: stream %#x, want %s", vec.Name, vec.Seed, s.state, vec.Stream)
		}
		for i, want := range vec.First {
			if got := math.Float32bits(s.At(uint64(i))); got != uint32(hex64(t, want)) {
				t.Errorf("%q seed %d [%d]: %#08x, want %s", vec.Name, vec.Seed, i, got, want)
			}
		}
		for _, at := range vec.At {
			num, _ := at[0].(json.Number)
			idx, err := strconv.ParseUint(string(num), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := at[1].(string)
			if got := math.Float32bits(s.At(idx)); got != uint32(hex64(t, want)) {
				t.Errorf("%q seed %d at %d: %#08x, want %s", vec.Name, vec.Seed, idx, got, want)
			}
		}
		n := 1
		for _, d := range vec.Shape {
			n *= d
		}
		h := sha256.New()
		var b [4]byte
		for _, x := range Generate(vec.Seed, vec.Name, Params{Center: vec.Center, Scale: vec.Scale}, n) {
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(x))
			h.Write(b[:])
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != vec.SHA256 {
			t.Errorf("%q seed %d shape %v: sha256 %s, want %s", vec.Name, vec.Seed, vec.Shape, got, vec.SHA256)
		}
	}
}

func TestFillMatchesAt(t *testing.T) {
	s := New(7, "blocks.0.attn.qkv.weight", Params{Scale: 0.05})
	buf := make([]float32, 100)
	s.Fill(buf, 1000)
	for j, x := range buf {
		if x != s.At(uint64(1000+j)) {
			t.Fatalf("Fill[%d] != At", j)
		}
		if x < -0.05 || x >= 0.05 {
			t.Fatalf("value %g outside [-0.05, 0.05)", x)
		}
	}
}
