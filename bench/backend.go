package bench

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Tensor is a buffer owned by one backend: host memory on the CPU, device
// memory on a GPU. Only the backend that allocated it may use it.
type Tensor interface {
	Shape() Shape
	DType() DType
}

// Node is one op of a graph with its hyper-parameters resolved: a value of a
// type from package ops (ops.PatchEmbed, ops.Unfold, ...). Backends switch on
// the concrete type.
type Node interface {
	// OpName is the op kind the node belongs to, as used by Supports.
	OpName() string
}

// Timing is what one timed run of a graph took.
type Timing struct {
	// Kernel is the time on the backend's own clock (CUDA events on a GPU).
	Kernel time.Duration
	// EndToEnd is host wall time around the same run, synchronisation included.
	EndToEnd time.Duration
}

// MemStats reports the bytes held by a backend's allocator.
type MemStats struct {
	Current int64 // bytes allocated now
	Peak    int64 // most bytes allocated at once since the last ResetPeak
}

// Info describes a backend for `vitbench info` and report headers.
type Info struct {
	Name      string            `json:"name"`
	Available bool              `json:"available"`
	Reason    string            `json:"reason,omitempty"` // why it is unavailable
	Device    string            `json:"device,omitempty"`
	Details   map[string]string `json:"details,omitempty"` // ISA path, threads, driver, ...
}

// Backend runs graphs on one device. Every backend runs exactly the same
// graph, built once by the op kind, so comparisons between backends are fair.
//
// The life of a run: Alloc the tensors, Upload inputs and weights, Enqueue
// the graph's nodes in order, Sync, Download the outputs, Free. Time wraps
// Enqueue calls with the backend's clock.
type Backend interface {
	// Name is the short name used in flags and tables ("cpu", "cuda").
	Name() string
	// Info says what the backend is running on, or why it is unavailable.
	Info() Info
	// Supports returns nil when the backend can run op in dtype, otherwise
	// the reason it cannot (shown as NS in every table).
	Supports(op string, dt DType) error
	// Alloc returns a zero-filled tensor.
	Alloc(shape Shape, dt DType) (Tensor, error)
	// Free releases a tensor; freeing nil is a no-op.
	Free(t Tensor)
	// Upload copies host data (len = elements of t) into t.
	Upload(t Tensor, src []float32) error
	// Download copies t into dst (len = elements of t); it synchronises first.
	Download(t Tensor, dst []float32) error
	// Enqueue runs (or queues) node with the given inputs and outputs, in the
	// order the op kind documents.
	Enqueue(node Node, in, out []Tensor) error
	// Sync waits for every enqueued node to finish.
	Sync() error
	// Time runs fn, which enqueues work, and returns its duration on the
	// backend's clock and on the host's, after synchronising.
	Time(fn func() error) (Timing, error)
	// Memory reports the allocator's current and peak bytes.
	Memory() MemStats
	// ResetPeak sets the allocator's peak to its current bytes.
	ResetPeak()
	// Close releases the backend's resources.
	Close() error
}

// InPlacer is implemented by a backend that can run some nodes with an
// output written over one of their inputs. A prepared program (package
// runner) gives such an output the input's buffer when the graph never
// reads that input's value again, so that the node reads and writes one
// buffer: a convolution adds its residual into the residual's own buffer,
// as ONNX Runtime's memory planner arranges, and the output's separate
// buffer is never fetched into the caches to be overwritten.
type InPlacer interface {
	// InPlace returns the index of node's input whose buffer its output out
	// may be, or -1. The node must compute the same values either way.
	InPlace(node Node, out int) int
}

// BackendFactory opens a backend with the given thread count (0 = default).
// It returns a backend even when the device is unusable, so that the reason
// can be reported; Info().Available says which.
type BackendFactory func(threads int) (Backend, error)

var (
	backendsMu sync.Mutex
	backends   = map[string]BackendFactory{}
)

// RegisterBackend makes a backend available by name. It is called from the
// init function of each impl package.
func RegisterBackend(name string, f BackendFactory) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if _, dup := backends[name]; dup {
		panic("bench: backend registered twice: " + name)
	}
	backends[name] = f
}

// BackendNames lists the registered backends, "cpu" first, then by name.
func BackendNames() []string {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	names := make([]string, 0, len(backends))
	for n := range backends {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if (names[i] == "cpu") != (names[j] == "cpu") {
			return names[i] == "cpu"
		}
		return names[i] < names[j]
	})
	return names
}

// ErrUnknownBackend is returned by OpenBackend for a name nobody registered.
var ErrUnknownBackend = errors.New("unknown backend")

// OpenBackend opens the named backend.
func OpenBackend(name string, threads int) (Backend, error) {
	backendsMu.Lock()
	f, ok := backends[name]
	backendsMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w %q (registered: %v)", ErrUnknownBackend, name, BackendNames())
	}
	return f(threads)
}
