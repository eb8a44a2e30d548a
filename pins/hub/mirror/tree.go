package mirror

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"path"
	"sort"
	"strings"
)

// treeOIDs returns the git tree sha1 of every directory holding files
// ("" for the root), as git computes it for the commit's files: blobs (the
// pointer file for LFS) with mode 100644 and subtrees with mode 40000.
func (s *Server) treeOIDs(files []Entry) (map[string]string, error) {
	type child struct {
		name string
		dir  bool
		oid  []byte
	}
	kids := map[string][]child{}
	var dirs []string
	seen := map[string]bool{"": true}
	for _, e := range files {
		te, err := s.entry(e)
		if err != nil {
			return nil, err
		}
		oid, err := hex.DecodeString(te.OID)
		if err != nil {
			return nil, fmt.Errorf("mirror: %s: oid %q: %w", e.Path, te.OID, err)
		}
		parent := dirOf(e.Path)
		kids[parent] = append(kids[parent], child{name: path.Base(e.Path), oid: oid})
		for d := parent; !seen[d]; d = dirOf(d) {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	// deepest first, so that a directory's subtrees are known before it
	sort.Slice(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
	oids := map[string]string{}
	hash := func(d string) {
		cs := kids[d]
		// git orders entries by name, a directory's name as if it ended in "/"
		key := func(c child) string {
			if c.dir {
				return c.name + "/"
			}
			return c.name
		}
		sort.Slice(cs, func(i, j int) bool { return key(cs[i]) < key(cs[j]) })
		var body []byte
		for _, c := range cs {
			mode := "100644"
			if c.dir {
				mode = "40000"
			}
			body = append(body, mode+" "+c.name+"\x00"...)
			body = append(body, c.oid...)
		}
		h := sha1.New()
		fmt.Fprintf(h, "tree %d\x00", len(body))
		h.Write(body)
		sum := h.Sum(nil)
		oids[d] = hex.EncodeToString(sum)
		if d != "" {
			p := dirOf(d)
			kids[p] = append(kids[p], child{name: path.Base(d), dir: true, oid: sum})
		}
	}
	for _, d := range dirs {
		hash(d)
	}
	hash("")
	return oids, nil
}

// dirOf returns the directory of a slash path, "" at the top.
func dirOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}
