package mirror

import (
	"encoding/json"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
)

// TreeEntry is one entry of the tree API, as the Hub spells it.
type TreeEntry struct {
	Type string   `json:"type"` // "file" or "directory"
	OID  string   `json:"oid,omitempty"`
	Size int64    `json:"size"`
	Path string   `json:"path"`
	LFS  *TreeLFS `json:"lfs,omitempty"`
}

// TreeLFS is the lfs object of a tree entry.
type TreeLFS struct {
	OID         string `json:"oid"` // sha256 of the content
	Size        int64  `json:"size"`
	PointerSize int    `json:"pointerSize"`
}

// entry returns the tree entry of a file, hashing it if needed.
func (s *Server) entry(e Entry) (TreeEntry, error) {
	d, err := s.digests.get(e.Abs)
	if err != nil {
		return TreeEntry{}, err
	}
	te := TreeEntry{Type: "file", OID: d.GitSHA1, Size: e.Size, Path: e.Path}
	if s.isLFS(e) {
		ptr := LFSPointer(d.SHA256, e.Size)
		te.OID = GitBlobSHA1([]byte(ptr))
		te.LFS = &TreeLFS{OID: d.SHA256, Size: e.Size, PointerSize: len(ptr)}
	}
	return te, nil
}

// treeEntries lists the files (and the directories) under dir; recursive
// lists the whole subtree, else only direct children.
func treeEntries(files []Entry, dir string, recursive bool) (out []Entry, dirs []string) {
	seen := map[string]bool{}
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	for _, e := range files {
		rest, ok := strings.CutPrefix(e.Path, prefix)
		if !ok {
			continue
		}
		parts := strings.Split(rest, "/")
		for i := 1; i < len(parts); i++ {
			d := prefix + strings.Join(parts[:i], "/")
			if (recursive || i == 1) && !seen[d] {
				seen[d] = true
				dirs = append(dirs, d)
			}
		}
		if recursive || len(parts) == 1 {
			out = append(out, e)
		}
	}
	return out, dirs
}

func (s *Server) handleTree(w http.ResponseWriter, r *http.Request) {
	s.stats.api.Add(1)
	repo, commit, ok := s.commitOf(w, r)
	if !ok {
		return
	}
	files, err := s.Source.Files(repo, commit)
	if err != nil {
		hubError(w, http.StatusNotFound, "RevisionNotFound", err.Error())
		return
	}
	q := r.URL.Query()
	dir := strings.Trim(r.PathValue("path"), "/")
	sel, dirs := treeEntries(files, dir, q.Get("recursive") == "true" || q.Get("recursive") == "1")
	if dir != "" && len(sel) == 0 && len(dirs) == 0 {
		hubError(w, http.StatusNotFound, "EntryNotFound", repo+"@"+commit+": no directory "+strconv.Quote(dir))
		return
	}
	all := make([]TreeEntry, 0, len(sel)+len(dirs))
	for _, d := range dirs {
		all = append(all, TreeEntry{Type: "directory", Path: d})
	}
	for _, e := range sel {
		te, err := s.entry(e)
		if err != nil {
			hubError(w, http.StatusInternalServerError, "", err.Error())
			return
		}
		all = append(all, te)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Path < all[j].Path })
	s.writePage(w, r, all)
}

// writePage writes one page of entries and a Link header to the next.
func (s *Server) writePage(w http.ResponseWriter, r *http.Request, all []TreeEntry) {
	size := s.PageSize
	if size <= 0 {
		size = DefaultPageSize
	}
	q := r.URL.Query()
	from, _ := strconv.Atoi(q.Get("cursor"))
	from = min(max(from, 0), len(all))
	to := min(from+size, len(all))
	if to < len(all) {
		q.Set("cursor", strconv.Itoa(to))
		next := url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawQuery: q.Encode()}
		w.Header().Set("Link", "<"+next.String()+`>; rel="next"`)
	}
	writeJSON(w, all[from:to])
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// sibling is one file of the revision API.
type sibling struct {
	RFilename string      `json:"rfilename"`
	Size      *int64      `json:"size,omitempty"`
	BlobID    string      `json:"blobId,omitempty"`
	LFS       *siblingLFS `json:"lfs,omitempty"`
}

type siblingLFS struct {
	SHA256      string `json:"sha256"`
	Size        int64  `json:"size"`
	PointerSize int    `json:"pointerSize"`
}

func (s *Server) handleRevision(w http.ResponseWriter, r *http.Request) {
	s.stats.api.Add(1)
	repo, commit, ok := s.commitOf(w, r)
	if !ok {
		return
	}
	files, err := s.Source.Files(repo, commit)
	if err != nil {
		hubError(w, http.StatusNotFound, "RevisionNotFound", err.Error())
		return
	}
	blobs := r.URL.Query().Get("blobs") == "true"
	sibs := make([]sibling, 0, len(files))
	for _, e := range files {
		sb := sibling{RFilename: e.Path}
		if blobs {
			te, err := s.entry(e)
			if err != nil {
				hubError(w, http.StatusInternalServerError, "", err.Error())
				return
			}
			size := e.Size
			sb.Size, sb.BlobID = &size, te.OID
			if te.LFS != nil {
				sb.LFS = &siblingLFS{SHA256: te.LFS.OID, Size: te.LFS.Size, PointerSize: te.LFS.PointerSize}
			}
		}
		sibs = append(sibs, sb)
	}
	writeJSON(w, map[string]any{"id": repo, "modelId": repo, "sha": commit, "siblings": sibs})
}

func (s *Server) handleRefs(w http.ResponseWriter, r *http.Request) {
	s.stats.api.Add(1)
	repo := r.PathValue("owner") + "/" + r.PathValue("name")
	if !s.authorized(w, r, repo) {
		return
	}
	refs, err := s.Source.Refs(repo)
	if err != nil {
		hubError(w, http.StatusNotFound, "RepoNotFound", err.Error())
		return
	}
	type branch struct {
		Name         string `json:"name"`
		Ref          string `json:"ref"`
		TargetCommit string `json:"targetCommit"`
	}
	branches := []branch{}
	for name, c := range refs {
		branches = append(branches, branch{name, path.Join("refs/heads", name), c})
	}
	sort.Slice(branches, func(i, j int) bool { return branches[i].Name < branches[j].Name })
	writeJSON(w, map[string]any{"branches": branches, "tags": []any{}, "converts": []any{}})
}
