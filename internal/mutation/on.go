//go:build mutation

package mutation

import (
	"fmt"
	"sort"
	"sync"
)

// Enabled reports whether this build has the mutation switches: true with
// the "mutation" build tag.
const Enabled = true

// Info describes one registered mutation.
type Info struct {
	Name string // the switch's name, e.g. "gelu_tanh"
	Site string // where it acts: the node or graph it changes
	Doc  string // the mistake, in one sentence
}

var (
	mu      sync.Mutex
	active  string
	reached = map[string]bool{}
	known   = map[string]Info{}
)

// Register makes a mutation known; a name registered twice panics.
func Register(i Info) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := known[i.Name]; dup || i.Name == "" {
		panic(fmt.Sprintf("mutation: %q registered twice or unnamed", i.Name))
	}
	known[i.Name] = i
}

// Update replaces the description of a registered mutation.
func Update(i Info) {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := known[i.Name]; !ok {
		panic(fmt.Sprintf("mutation: %q is not registered", i.Name))
	}
	known[i.Name] = i
}

// List returns every registered mutation, sorted by name.
func List() []Info {
	mu.Lock()
	defer mu.Unlock()
	out := make([]Info, 0, len(known))
	for _, i := range known {
		out = append(out, i)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// Set activates the named mutation ("" for none); an unknown name is an
// error.
func Set(name string) error {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := known[name]; !ok && name != "" {
		return fmt.Errorf("mutation: unknown mutation %q", name)
	}
	active = name
	return nil
}

// On records that the decision point of the named mutation was reached
// (see Reached) and reports whether that mutation is the active one.
func On(name string) bool {
	mu.Lock()
	defer mu.Unlock()
	reached[name] = true
	return active == name
}

// Reached returns the mutations whose decision points On saw since the
// last call, sorted, and forgets them.
func Reached() []string {
	mu.Lock()
	defer mu.Unlock()
	out := make([]string, 0, len(reached))
	for n := range reached {
		out = append(out, n)
	}
	clear(reached)
	sort.Strings(out)
	return out
}
