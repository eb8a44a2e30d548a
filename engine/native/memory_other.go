//go:build !linux && !darwin

package native

// AvailableMemory is not implemented on this OS.
func AvailableMemory() (Memory, error) { return Memory{}, ErrUnsupported }
