//go:build !mutation

package mutation

// Enabled reports whether this build has the mutation switches (the
// "mutation" build tag). It is a constant, so `if mutation.Enabled`
// blocks vanish from production builds.
const Enabled = false

// On reports whether the named mutation is active; without the
// "mutation" tag it never is.
func On(name string) bool { return false }
