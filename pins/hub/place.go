package hub

import (
	"fmt"
	"os"
	"path/filepath"
)

// Place gives a drama root a plain directory per variant, dir: a symlink per
// file into the cache's snapshot, or with hardLinks a hard link to the
// blob (a plain file, sharing its bytes).
func (res *Result) Place(dir string, hardLinks bool) error {
	for _, r := range res.Files {
		dst := filepath.Join(dir, filepath.FromSlash(r.Path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		tmp := dst + ".drama-place.tmp"
		_ = os.Remove(tmp)
		var err error
		if hardLinks {
			err = os.Link(r.Blob, tmp)
		} else {
			err = os.Symlink(r.Snapshot, tmp)
		}
		if err == nil {
			err = os.Rename(tmp, dst)
		}
		if err != nil {
			return fmt.Errorf("place %s: %w", dst, err)
		}
	}
	return nil
}
