//go:build mutation

package mutation

import (
	"slices"
	"testing"
)

// TestSwitchAndReach: Set activates one registered name at a time, On
// reports it and records every name it is asked about, Reached drains
// that record.
func TestSwitchAndReach(t *testing.T) {
	Register(Info{Name: "test_a", Doc: "a"})
	Register(Info{Name: "test_b", Doc: "b"})
	if err := Set("no_such_mutation"); err == nil {
		t.Error("an unknown name was accepted")
	}
	if err := Set("test_a"); err != nil {
		t.Fatal(err)
	}
	defer Set("")
	Reached()
	if !On("test_a") || On("test_b") {
		t.Error("On does not follow Set")
	}
	if got := Reached(); !slices.Equal(got, []string{"test_a", "test_b"}) {
		t.Errorf("reached %v", got)
	}
	if got := Reached(); len(got) != 0 {
		t.Errorf("Reached did not forget: %v", got)
	}
	if err := Set(""); err != nil || On("test_a") {
		t.Error("Set(\"\") leaves a mutation on")
	}
	defer func() {
		if recover() == nil {
			t.Error("a second registration of one name did not panic")
		}
	}()
	Register(Info{Name: "test_a"})
}
