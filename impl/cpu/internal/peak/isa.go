package peak

// ISA names the instruction-set path of the FMA loop.
type ISA string

// The paths, fastest first.
const (
	ISAAVX512 ISA = "avx512"
	ISAAVX2   ISA = "avx2"
	ISAGo     ISA = "go"
)

// Supported lists the paths this build can run on this machine, fastest
// first; the Go path is always last.
func Supported() []ISA { return supportedISAs() }

// Best returns the fastest supported path.
func Best() ISA { return supportedISAs()[0] }

func isSupported(p ISA) bool {
	for _, s := range supportedISAs() {
		if s == p {
			return true
		}
	}
	return false
}
