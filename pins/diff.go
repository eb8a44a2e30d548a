package pins

import "sort"

// Change is how one path differs between two pins.
type Change struct {
	Path string `json:"path"`
	// Kind is "added" (only in B), "removed" (only in A), "changed"
	// (both, different content) or "same" (both, same sha256).
	Kind string `json:"kind"`
	A    *File  `json:"a,omitempty"`
	B    *File  `json:"b,omitempty"`
}

// Diff compares the files of a and b by path, sorted by path. Files with
// equal size and sha256 are "same"; a file without a digest on either side counts as
// changed unless its size and git sha1 agree.
func Diff(a, b *Pins) []Change {
	byPath := map[string]*Change{}
	for i := range a.Files {
		f := a.Files[i]
		byPath[f.Path] = &Change{Path: f.Path, Kind: "removed", A: &f}
	}
	for i := range b.Files {
		f := b.Files[i]
		c, ok := byPath[f.Path]
		if !ok {
			byPath[f.Path] = &Change{Path: f.Path, Kind: "added", B: &f}
			continue
		}
		c.B, c.Kind = &f, "changed"
		if sameContent(*c.A, f) {
			c.Kind = "same"
		}
	}
	out := make([]Change, 0, len(byPath))
	for _, c := range byPath {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func sameContent(x, y File) bool {
	if x.Size != y.Size {
		return false
	}
	if x.SHA256 != "" && y.SHA256 != "" {
		return x.SHA256 == y.SHA256
	}
	return x.GitSHA1 != "" && x.GitSHA1 == y.GitSHA1
}
