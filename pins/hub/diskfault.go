package hub

import "os"

// diskFault, when set (by tests only), is asked before each write of a
// partial file or its sidecar and may fail it, say with ENOSPC: a seam to
// play a full disk, which a test cannot make for real without privileges.
var diskFault func(path string, off, n int64) error

// writeAt writes p at off in f, through diskFault.
func writeAt(f *os.File, p []byte, off int64) (int, error) {
	if diskFault != nil {
		if err := diskFault(f.Name(), off, int64(len(p))); err != nil {
			return 0, &os.PathError{Op: "write", Path: f.Name(), Err: err}
		}
	}
	return f.WriteAt(p, off)
}
