//go:build purego || !amd64

package kern

func avgPool2x2BlockedRow(int, *float32, *float32, *float32) bool { return false }

func maxPool3s2BlockedRow(int, *float32, *float32) bool { return false }
