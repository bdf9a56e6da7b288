package main

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"vitbench/bench/npy"
)

// TestHostileSpecialFixtureFiles: a FIFO as case.json, outputs.npz or outputs/out.npy
// used to block in open forever, and a case.json symlinked to /dev/zero passed the 1 MiB
// limit (size 0) and was read without end. Each is now a FAIL row naming the file and
// what it is; the good case is OK and the exit status is 2 (unreadable input).
func TestHostileSpecialFixtureFiles(t *testing.T) {
	root := hostileTree(t, "b_fifo_case", "c_fifo_npz", "d_fifo_npy", "e_dev_zero", "f_fifo_link")
	mkfifo(t, filepath.Join(root, "b_fifo_case", "case.json"))
	mkfifo(t, filepath.Join(root, "c_fifo_npz", "outputs.npz"))
	os.Remove(filepath.Join(root, "d_fifo_npy", "outputs.npz"))
	os.Mkdir(filepath.Join(root, "d_fifo_npy", "outputs"), 0o755)
	mkfifo(t, filepath.Join(root, "d_fifo_npy", "outputs", "out.npy"))
	os.Remove(filepath.Join(root, "e_dev_zero", "case.json"))
	if err := os.Symlink("/dev/zero", filepath.Join(root, "e_dev_zero", "case.json")); err != nil {
		t.Fatal(err)
	}
	// A symlink inside the case directory to a FIFO inside it: confined, but not regular.
	mkfifo(t, filepath.Join(root, "f_fifo_link", "pipe"))
	os.Remove(filepath.Join(root, "f_fifo_link", "outputs.npz"))
	os.Symlink("pipe", filepath.Join(root, "f_fifo_link", "outputs.npz"))

	r, rows := checkRows(t, root)
	wantExit(t, r, 2, "check")
	wantFailRow(t, rows, filepath.Join(root, "b_fifo_case"), "b_fifo_case/case.json: a FIFO (named pipe), not a regular file")
	wantFailRow(t, rows, "soft_split/c_fifo_npz", "c_fifo_npz/outputs.npz: a FIFO (named pipe), not a regular file")
	wantFailRow(t, rows, "soft_split/d_fifo_npy", "d_fifo_npy/outputs/out.npy: a FIFO (named pipe), not a regular file")
	wantFailRow(t, rows, filepath.Join(root, "e_dev_zero"), "e_dev_zero/case.json: refusing a symlink that leaves the fixture directory (-> /dev/zero)")
	wantFailRow(t, rows, "soft_split/f_fifo_link", "f_fifo_link/outputs.npz: a FIFO (named pipe), not a regular file")
	if len(rows) != 6 {
		t.Errorf("%d rows, want 6: %v", len(rows), rowNames(rows))
	}
	if r.elapsed.Seconds() > 10 {
		t.Errorf("took %v", r.elapsed)
	}
}

// TestHostileSpecialInputFiles: a FIFO as -weights, as a result file of compare and report,
// as report's -peak and -base, as run's -base and as the fixture tree's MANIFEST.sha256
// used to block in open. Each is now an error naming the file (exit 2), at once.
func TestHostileSpecialInputFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	mkfifo(t, fifo)
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"meta": {}, "rows": [{"case": "a", "backend": "cpu", "n": 1, "samples_ns": [100]}]}`), 0o644)
	tree := hostileTree(t)
	mkfifo(t, filepath.Join(tree, "MANIFEST.sha256"))
	for _, args := range [][]string{
		{"bench", "-run", "^layernorm/odd_b2_d147$", "-weights", fifo},
		{"compare", fifo, good},
		{"compare", good, fifo},
		{"report", fifo},
		{"report", "-peak", fifo, good},
		{"report", "-base", fifo, good},
		{"baseline", "-check", fifo},
		{"run", "-o", filepath.Join(dir, "run"), "-torch", "off", "-base", fifo},
		{"check", "-fixtures", tree},
	} {
		r := runHostile(t, runOpts{dir: dir}, args...)
		wantExit(t, r, 2, args...)
		wantIn(t, fmt.Sprint(args), r.stderr, "FIFO (named pipe), not a regular file")
	}
}

// TestHostileManifestDevZero: a manifest entry naming a symlink to /dev/zero used to be
// hashed through the symlink (ten minutes at 100% CPU) before the symlink was checked.
// The file is now refused before it is read; that case is a FAIL row at once, the good
// case (listed in the manifest too) is OK.
func TestHostileManifestDevZero(t *testing.T) {
	root := hostileTree(t, "b_zero")
	link := filepath.Join(root, "b_zero", "extra.bin")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	var lines []string
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		sum := strings.Repeat("0", 64) // the symlink's "digest": never computed
		if info.Mode().IsRegular() {
			raw, _ := os.ReadFile(p)
			h := sha256.Sum256(raw)
			sum = hex.EncodeToString(h[:])
		}
		lines = append(lines, sum+"  "+rel)
		return nil
	})
	sort.Strings(lines)
	os.WriteFile(filepath.Join(root, "MANIFEST.sha256"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	r, rows := checkRows(t, root)
	wantExit(t, r, 2, "check")
	wantFailRow(t, rows, "soft_split/b_zero", "manifest mismatch", "b_zero/extra.bin: refusing a symlink that leaves the fixture directory (-> /dev/zero)")
	if r.elapsed.Seconds() > 10 {
		t.Errorf("took %v", r.elapsed)
	}
}

// TestHostileSymlinks: a symlink loop as outputs.npz used to be reported as a missing
// file, and a case.json symlinked outside its case directory was accepted although the
// README forbids it. Both are FAIL rows saying what they are.
func TestHostileSymlinks(t *testing.T) {
	root := hostileTree(t, "b_loop", "c_outside")
	loop := filepath.Join(root, "b_loop", "outputs.npz")
	os.Remove(loop)
	os.Symlink("outputs.npz", loop)
	outside := filepath.Join(t.TempDir(), "case.json")
	os.Rename(filepath.Join(root, "c_outside", "case.json"), outside)
	os.Symlink(outside, filepath.Join(root, "c_outside", "case.json"))
	r, rows := checkRows(t, root)
	wantExit(t, r, 2, "check")
	wantFailRow(t, rows, "soft_split/b_loop", "b_loop/outputs.npz: symlink loop")
	wantFailRow(t, rows, filepath.Join(root, "c_outside"), "c_outside/case.json: refusing a symlink that leaves the fixture directory (-> "+outside+")")
	if strings.Contains(rows["soft_split/b_loop"].Reason, "missing") || strings.Contains(rows["soft_split/b_loop"].Reason, "not exist") {
		t.Errorf("a symlink loop is reported as missing: %s", rows["soft_split/b_loop"].Reason)
	}
}

// rawNPZ writes an .npz holding one deflated member out.npy whose data is the .npy
// header of shape [1, 180, 45] followed by extra zero bytes beyond its data, declaring
// uncompressed bytes in the zip headers (a zip64 record when that is past 4 GiB).
func rawNPZ(t *testing.T, path string, extra int, declared uint64) {
	t.Helper()
	var npyBuf bytes.Buffer
	if err := npy.EncodeNPY(&npyBuf, []int{1, 180, 45}, make([]float32, 180*45)); err != nil {
		t.Fatal(err)
	}
	body := append(npyBuf.Bytes(), make([]byte, extra)...)
	var comp bytes.Buffer
	fw, _ := flate.NewWriter(&comp, flate.BestCompression)
	fw.Write(body)
	fw.Close()
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "out.npy", Method: zip.Deflate, CRC32: crc32.ChecksumIEEE(body),
		CompressedSize64: uint64(comp.Len()), UncompressedSize64: declared})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(comp.Bytes())
	zw.Close()
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHostileZip64Declared: a zip64 member declaring 2^64-1 bytes used to have its whole
// stream inflated before a bare "unexpected EOF". It is refused from its declared size,
// before anything is inflated, naming the archive, the array and the sizes.
func TestHostileZip64Declared(t *testing.T) {
	root := hostileTree(t, "b_zip64")
	rawNPZ(t, filepath.Join(root, "b_zip64", "outputs.npz"), 64<<20, math.MaxUint64)
	r, rows := checkRows(t, root)
	wantExit(t, r, 2, "check")
	wantFailRow(t, rows, "soft_split/b_zip64", "b_zip64/outputs.npz", `array "out"`, "declares 18446744073709551615 uncompressed bytes")
}

// TestHostileKnownBadArrays keeps the classes that already worked from regressing: a bad
// .npy header, a wrong dtype, a truncated array and a zip bomb (a member inflating past
// its declared size) are each a FAIL row naming the file, the good case is OK, exit 2.
func TestHostileKnownBadArrays(t *testing.T) {
	root := hostileTree(t, "b_header", "c_dtype", "d_truncated", "e_bomb")
	npyDir := func(d string) string {
		os.Remove(filepath.Join(root, d, "outputs.npz"))
		p := filepath.Join(root, d, "outputs")
		os.Mkdir(p, 0o755)
		return filepath.Join(p, "out.npy")
	}
	os.WriteFile(npyDir("b_header"), []byte("\x93NUMPY\x01\x00\x10\x00{'descr': '<f4',\n"), 0o644)
	f64, _ := os.ReadFile("../../bench/npy/testdata/f64.npy")
	os.WriteFile(npyDir("c_dtype"), f64, 0o644)
	var full bytes.Buffer
	npy.EncodeNPY(&full, []int{1, 180, 45}, make([]float32, 180*45))
	os.WriteFile(npyDir("d_truncated"), full.Bytes()[:full.Len()/2], 0o644)
	rawNPZ(t, filepath.Join(root, "e_bomb", "outputs.npz"), 256<<20, uint64(full.Len()))
	r, rows := checkRows(t, root)
	wantExit(t, r, 2, "check")
	wantFailRow(t, rows, "soft_split/b_header", "b_header/outputs/out.npy", "header")
	wantFailRow(t, rows, "soft_split/c_dtype", "c_dtype/outputs/out.npy", "dtype <f8")
	wantFailRow(t, rows, "soft_split/d_truncated", "d_truncated/outputs/out.npy", "truncated")
	wantFailRow(t, rows, "soft_split/e_bomb", "e_bomb/outputs.npz", `array "out"`)
	if r.elapsed.Seconds() > 10 {
		t.Errorf("took %v (a bomb inflated?)", r.elapsed)
	}
}
