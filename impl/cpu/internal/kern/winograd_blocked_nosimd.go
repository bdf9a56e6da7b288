//go:build purego || !amd64

package kern

func winogradInputBlocked(int, *float32, int, *float32, int) bool { return false }

func winogradOutputBlocked(int, *float32, int, *[16]float32, *float32, *float32, int, bool) bool {
	return false
}
