package store

import "syscall"

// remoteNames are the macOS file system types whose notices see this
// host's changes alone.
var remoteNames = map[string]bool{"nfs": true, "smbfs": true, "afpfs": true, "webdav": true, "cifs": true, "macfuse": true, "osxfuse": true}

// remoteFS reports whether dir (or, when it does not exist yet, its
// parent) is on a network file system.
func remoteFS(dir string) bool {
	var st syscall.Statfs_t
	for range 64 {
		if err := syscall.Statfs(dir, &st); err == nil {
			b := make([]byte, 0, len(st.Fstypename))
			for _, c := range st.Fstypename {
				if c == 0 {
					break
				}
				b = append(b, byte(c))
			}
			return remoteNames[string(b)]
		}
		parent := parentOf(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return true // unknown: rescans see every change
}
