//go:build purego || !amd64

package kern

func momentsBlocked(int, *float32, *[16]float32, *[16]float64, *[16]float64) bool { return false }
