//go:build !linux && !darwin

package store

// remoteFS cannot tell a network file system here: rescans, which see
// every change, are used.
func remoteFS(dir string) bool { return true }
