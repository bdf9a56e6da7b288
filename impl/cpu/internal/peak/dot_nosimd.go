//go:build purego || !amd64

package peak

// dotKernel: there is no bf16 dot-product loop in this build.
func dotKernel() (fmaKernel, bool) { return fmaKernel{}, false }

// amxKernel: there is no AMX loop in this build.
func amxKernel() (fmaKernel, bool) { return fmaKernel{}, false }
