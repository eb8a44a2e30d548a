package hub

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/drama-tts/drama/internal/atomicfile"
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
		var err error
		if hardLinks {
			err = atomicfile.Link(r.Blob, dst)
		} else {
			err = atomicfile.Symlink(r.Snapshot, dst)
		}
		if err != nil {
			return fmt.Errorf("place %s: %w", dst, err)
		}
	}
	return nil
}
