package cuda

import "unsafe"

// addByte returns p advanced by n bytes.
func addByte(p *byte, n uintptr) *byte { return (*byte)(unsafe.Add(unsafe.Pointer(p), n)) }

// cString copies a NUL-terminated C string owned by a library (at most
// 64 KiB of it).
func cString(p *byte) string {
	if p == nil {
		return ""
	}
	var b []byte
	for q := p; *q != 0 && len(b) < 1<<16; q = addByte(q, 1) {
		b = append(b, *q)
	}
	return string(b)
}

// cStrings returns NUL-terminated copies of ss and an array of pointers to
// them, for char** parameters; the caller pins both.
func cStrings(ss []string) ([][]byte, []*byte) {
	bufs := make([][]byte, len(ss))
	ptrs := make([]*byte, len(ss))
	for i, s := range ss {
		bufs[i] = append([]byte(s), 0)
		ptrs[i] = &bufs[i][0]
	}
	return bufs, ptrs
}
