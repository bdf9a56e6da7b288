package cuda

import "unsafe"

// addByte returns p advanced by n bytes.
func addByte(p *byte, n uintptr) *byte { return (*byte)(unsafe.Add(unsafe.Pointer(p), n)) }
