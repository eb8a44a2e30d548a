package store

import "syscall"

// remote file systems' magic numbers (statfs(2)): their notices see this
// host's changes alone.
var remoteMagic = map[uint32]string{
	0x6969:     "nfs",
	0xff534d42: "cifs",
	0xfe534d42: "smb2",
	0x517b:     "smb",
	0x00c36400: "ceph",
	0x65735546: "fuse", // sshfs, GlusterFS, ceph-fuse, s3fs, ...
	0x01021997: "9p",
	0x0bd00bd0: "lustre",
	0x5346414f: "afs",
	0x47504653: "gpfs",
	0x013111a8: "ibrix",
	0x6b414653: "kafs",
	0x73757245: "coda",
}

// remoteFS reports whether dir (or, when it does not exist yet, its
// parent) is on a network file system.
func remoteFS(dir string) bool {
	var st syscall.Statfs_t
	for range 64 {
		if err := syscall.Statfs(dir, &st); err == nil {
			_, ok := remoteMagic[uint32(st.Type)]
			return ok
		}
		parent := parentOf(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return true // unknown: rescans see every change
}
