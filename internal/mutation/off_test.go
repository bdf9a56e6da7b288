//go:build !mutation

package mutation

import "testing"

// TestOffBuildHasNoSwitches: without the tag nothing can be switched on.
func TestOffBuildHasNoSwitches(t *testing.T) {
	if Enabled || On("gelu_tanh") || On("") {
		t.Error("a build without the mutation tag reports a mutation on")
	}
}
