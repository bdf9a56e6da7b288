//go:build purego || !amd64

package kern

func affineBlocked(int, *[16]float32, *[16]float32, *float32, *float32, bool) bool { return false }
