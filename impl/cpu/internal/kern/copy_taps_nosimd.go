//go:build purego || !amd64

package kern

func copyTaps12For(ISA) func(n int, src *float32, taps *int, dst *float32) { return nil }

func transposeRows(int, int, *float32, *int, *float32) bool { return false }

func rowPanels(int, int, *float32, int, *float32, int) bool { return false }
