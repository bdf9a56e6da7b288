package kern

// ISA names the instruction-set path kernels dispatch to.
type ISA string

// The paths, fastest first.
const (
	ISAAVX512 ISA = "avx512"
	ISAAVX2   ISA = "avx2"
	ISAGo     ISA = "go"
)

// active is the path in use; set at init by detectISA and changed only by
// SetISA (tests run every path the machine supports).
var active = detectISA()

// Active returns the path kernels currently dispatch to.
func Active() ISA { return active }

// Supported lists the paths this build can run on this machine, fastest
// first; the Go path is always last.
func Supported() []ISA { return supportedISAs() }

// SetISA switches every kernel to path p and returns the previous path. It
// panics if p is not supported here. It is not safe to call while kernels run.
func SetISA(p ISA) ISA {
	ok := false
	for _, s := range supportedISAs() {
		ok = ok || s == p
	}
	if !ok {
		panic("kern: ISA " + string(p) + " not supported on this machine/build")
	}
	prev := active
	active = p
	return prev
}
