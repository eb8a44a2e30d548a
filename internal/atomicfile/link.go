package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Symlink makes path a symbolic link to target, replacing whatever is at
// path: the link is made under a temporary beside path that names its
// owner (a dead run's is swept, see Sweep), renamed over path, and the
// directory synced.
func Symlink(target, path string) error {
	return linkAs(path, func(tmp string) error { return os.Symlink(target, tmp) })
}

// Link makes path a hard link to the file existing (the same file),
// replacing whatever is at path, as Symlink does.
func Link(existing, path string) error {
	return linkAs(path, func(tmp string) error { return os.Link(existing, tmp) })
}

// linkAs makes a link under an owner-named temporary beside path with
// link, and renames it over path.
func linkAs(path string, link func(tmp string) error) error {
	dir := filepath.Dir(path)
	_, _ = Sweep(dir, filepath.Base(path)) // best effort, as Write
	for range 10 {
		tmp := filepath.Join(dir, strings.Replace(pattern(path), "*", strconv.FormatUint(rand.Uint64(), 10), 1))
		err := link(tmp)
		if errors.Is(err, fs.ErrExist) {
			continue // another temporary of this run took the name
		}
		if err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			os.Remove(tmp)
			return err
		}
		syncDir(dir)
		return nil
	}
	return fmt.Errorf("link %s: no free temporary name beside it", path)
}
