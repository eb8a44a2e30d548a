package store

import "path/filepath"

// parentOf is the directory above dir.
func parentOf(dir string) string { return filepath.Dir(filepath.Clean(dir)) }
