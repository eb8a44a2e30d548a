package pins

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/drama-tts/drama/internal/filehash"
)

// Make returns complete pins for the files under dir: base's fields with
// Files replaced by every regular file found (drama's state folder and lock
// file excepted), each hashed in parallel. progress, if not nil, receives
// bytes hashed.
func Make(ctx context.Context, dir string, base Pins, progress func(int64)) (*Pins, error) {
	names, err := listFiles(dir)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("pins: %s holds no files to pin", dir)
	}
	files := make([]File, len(names))
	errs := make([]error, len(names))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.NumCPU(), len(names)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				sum, size, err := filehash.SHA256(ctx, filepath.Join(dir, filepath.FromSlash(names[i])), progress)
				files[i], errs[i] = File{Path: names[i], Size: size, SHA256: sum}, err
			}
		}()
	}
	for i := range names {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("pins: hash %s: %w", names[i], err)
		}
	}
	base.Format, base.Files = Format, files
	if err := base.Validate(); err != nil {
		return nil, fmt.Errorf("pins: %w", err)
	}
	return &base, nil
}

// listFiles returns the regular files under dir (links followed) that
// pins can name.
func listFiles(dir string) ([]string, error) {
	var names []string
	err := eachFile(dir, false, func(rel, name string) {
		if fi, err := os.Stat(name); err == nil && fi.Mode().IsRegular() {
			names = append(names, rel) // sockets, pipes, devices and broken links are not model files
		}
	})
	return names, err
}

// eachFile calls fn with the slash-separated relative path and the full
// name of every entry under dir that is not a directory, except drama's
// state folder and lock file. A walk error stops it, unless tolerant.
func eachFile(dir string, tolerant bool, fn func(rel, name string)) error {
	return filepath.WalkDir(dir, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if tolerant {
				return nil
			}
			return fmt.Errorf("pins: %w", err)
		}
		rel, _ := filepath.Rel(dir, name)
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir() && rel == StateDirName:
			return filepath.SkipDir
		case d.IsDir(), rel == LockFileName:
			return nil
		}
		fn(rel, name)
		return nil
	})
}
