package npy

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
)

// EncodeNPY writes data with the given shape as a version 1.0 float32 .npy
// stream: magic, header dictionary padded to a multiple of 64 bytes, data.
func EncodeNPY(w io.Writer, shape []int, data []float32) error {
	if err := checkLen(shape, data); err != nil {
		return err
	}
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
	}
	tuple := "(" + strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	tuple += ")"
	dict := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': %s, }", tuple)
	total := 10 + len(dict) + 1
	pad := (64 - total%64) % 64
	dict += strings.Repeat(" ", pad) + "\n"
	var buf bytes.Buffer
	buf.Write(magic)
	buf.Write([]byte{1, 0})
	binary.Write(&buf, binary.LittleEndian, uint16(len(dict)))
	buf.WriteString(dict)
	if _, err := w.Write(buf.Bytes()); err != nil {
		return err
	}
	out := make([]byte, 4*min(len(data), 1<<14))
	for i := 0; i < len(data); {
		n := min(len(out)/4, len(data)-i)
		for j := 0; j < n; j++ {
			binary.LittleEndian.PutUint32(out[4*j:], math.Float32bits(data[i+j]))
		}
		if _, err := w.Write(out[:4*n]); err != nil {
			return err
		}
		i += n
	}
	return nil
}

// WriteNPY writes one float32 .npy file.
func WriteNPY(path string, shape []int, data []float32) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := EncodeNPY(f, shape, data); err != nil {
		f.Close()
		return fmt.Errorf("%s: %v", path, err)
	}
	return f.Close()
}

// WriteNPZ writes named float32 arrays to a deflated .npz archive, members
// in name order (as np.savez_compressed does).
func WriteNPZ(path string, arrays map[string]*Array) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	names := make([]string, 0, len(arrays))
	for n := range arrays {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		a := arrays[name]
		w, err := zw.Create(name + ".npy")
		if err == nil {
			err = EncodeNPY(w, a.Shape, a.Data)
		}
		if err != nil {
			zw.Close()
			f.Close()
			return fmt.Errorf("%s: array %q: %v", path, name, err)
		}
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func checkLen(shape []int, data []float32) error {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return fmt.Errorf("negative dimension in shape %v", shape)
		}
		n *= d
	}
	if n != len(data) {
		return fmt.Errorf("shape %v holds %d values, got %d", shape, n, len(data))
	}
	return nil
}
