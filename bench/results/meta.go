package results

// Meta describes where and how a result file was produced.
//
// In the Go benchmark format each field is a config line ("key: value"): Tool is "tool",
// Commit is "vitbench-commit", Date "date", CPU "cpu", ISA "isa", GOOS "goos", GOARCH "goarch",
// Machine "machine", Threads "threads"; Extra holds every other config key (gpu, driver, cuda,
// torch-version, numpy-version, blas, pkg, ...).
type Meta struct {
	Tool    string            `json:"tool,omitempty"`
	Commit  string            `json:"commit,omitempty"`
	Date    string            `json:"date,omitempty"`
	CPU     string            `json:"cpu,omitempty"`
	ISA     string            `json:"isa,omitempty"`
	GOOS    string            `json:"goos,omitempty"`
	GOARCH  string            `json:"goarch,omitempty"`
	Machine string            `json:"machine,omitempty"`
	Threads int               `json:"threads,omitempty"`
	Extra   map[string]string `json:"extra,omitempty"`
}

// Config keys of the text format that map to Meta fields.
const (
	keyTool    = "tool"
	keyCommit  = "vitbench-commit"
	keyDate    = "date"
	keyCPU     = "cpu"
	keyISA     = "isa"
	keyGOOS    = "goos"
	keyGOARCH  = "goarch"
	keyMachine = "machine"
	keyThreads = "threads"
	keyBackend = "backend" // only read: a fallback for names without /backend=
)

// metaKeys lists the Meta config keys in the order WriteBenchText writes them.
// isa is written last, just before the first result, because it may change between rows.
var metaKeys = []string{keyGOOS, keyGOARCH, keyCPU, keyTool, keyCommit, keyDate, keyMachine, keyThreads}

// PartialKey is the Extra key (a "partial:" config line in the text format) that marks a
// file whose run was stopped before it finished (a signal): its value says why and how
// many cases were left, and reports built from the file say at the top that it is partial.
const PartialKey = "partial"

// MarkPartial records in m that the file's results are partial, and why (one line).
func (m *Meta) MarkPartial(why string) {
	if m.Extra == nil {
		m.Extra = map[string]string{}
	}
	m.Extra[PartialKey] = oneLine(why)
}
