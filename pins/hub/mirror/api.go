package mirror

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// TreeEntry is one entry of the tree and paths-info APIs, as the Hub
// spells it.
type TreeEntry struct {
	Type string `json:"type"` // "file" or "directory"
	// OID is a file's git blob sha1 (of its pointer file, for LFS) or a
	// directory's git tree sha1.
	OID        string      `json:"oid"`
	Size       int64       `json:"size"` // 0 for a directory
	Path       string      `json:"path"`
	LFS        *TreeLFS    `json:"lfs,omitempty"`
	LastCommit *LastCommit `json:"lastCommit,omitempty"` // with expand=true
}

// LastCommit is the commit an expanded entry names: the mirror knows one
// commit per snapshot, so it is the snapshot's own.
type LastCommit struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Date  string `json:"date"`
}

// TreeLFS is the lfs object of a tree entry.
type TreeLFS struct {
	OID         string `json:"oid"` // sha256 of the content
	Size        int64  `json:"size"`
	PointerSize int    `json:"pointerSize"`
}

// entry returns the tree entry of a file, hashing it if needed.
func (s *Server) entry(e Entry) (TreeEntry, error) {
	d, err := s.digests.get(s.Source, e)
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
	repo, commit, files, ok := s.filesOf(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	dir := strings.Trim(r.PathValue("path"), "/")
	sel, dirs := treeEntries(files, dir, truthy(q.Get("recursive")))
	if dir != "" && len(sel) == 0 && len(dirs) == 0 {
		hubError(w, http.StatusNotFound, "EntryNotFound", repo+"@"+commit+": no directory "+strconv.Quote(dir))
		return
	}
	// a directory's tree id needs the digests of the files under it, and
	// only those: the files under the listed folder
	trees, err := s.treeOIDs(filesUnder(files, dirs))
	if err != nil {
		hubError(w, http.StatusInternalServerError, "", err.Error())
		return
	}
	var last *LastCommit
	if truthy(q.Get("expand")) {
		last = s.lastCommit(repo, commit)
	}
	all := make([]TreeEntry, 0, len(sel)+len(dirs))
	for _, d := range dirs {
		all = append(all, TreeEntry{Type: "directory", OID: trees[d], Path: d, LastCommit: last})
	}
	for _, e := range sel {
		te, err := s.entry(e)
		if err != nil {
			hubError(w, http.StatusInternalServerError, "", err.Error())
			return
		}
		te.LastCommit = last
		all = append(all, te)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Path < all[j].Path })
	s.writePage(w, r, all)
}

// filesUnder returns the files inside any of the directories.
func filesUnder(files []Entry, dirs []string) []Entry {
	if len(dirs) == 0 {
		return nil
	}
	var out []Entry
	for _, e := range files {
		for _, d := range dirs {
			if strings.HasPrefix(e.Path, d+"/") {
				out = append(out, e)
				break
			}
		}
	}
	return out
}

// truthy reads a boolean query or form value as the Hub's clients send it
// ("true", "True", "1").
func truthy(v string) bool {
	b, err := strconv.ParseBool(v)
	return err == nil && b
}

// commitTime returns when a commit was made, as far as the source knows.
func (s *Server) commitTime(repo, commit string) time.Time {
	if d, ok := s.Source.(CommitDater); ok {
		if t, err := d.CommitTime(repo, commit); err == nil {
			return t.UTC()
		}
	}
	return time.Unix(0, 0).UTC()
}

// hubTime formats t the way the Hub's APIs do.
func hubTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func (s *Server) lastCommit(repo, commit string) *LastCommit {
	return &LastCommit{ID: commit, Title: commitTitle(commit), Date: hubTime(s.commitTime(repo, commit))}
}

// commitTitle is the title the mirror gives a commit whose message it does
// not have.
func commitTitle(commit string) string { return "snapshot " + commit[:min(len(commit), 7)] }

// handlePathsInfo answers POST paths-info: the tree entries of the named
// paths (files or directories; missing ones are left out), from a form
// (paths=a&paths=b&expand=true, as huggingface_hub sends) or a JSON body
// ({"paths": [...], "expand": true}, as @huggingface/hub sends).
func (s *Server) handlePathsInfo(w http.ResponseWriter, r *http.Request) {
	repo, commit, ok := s.commitOf(w, r)
	if !ok {
		return
	}
	var req struct {
		Paths  []string `json:"paths"`
		Expand bool     `json:"expand"`
	}
	r.Body = http.MaxBytesReader(w, r.Body, 8<<20)
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "application/json" {
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			hubError(w, http.StatusBadRequest, "", "paths-info: the JSON body is not {\"paths\": [...], \"expand\": bool}: "+err.Error())
			return
		}
	} else {
		if err := r.ParseForm(); err != nil {
			hubError(w, http.StatusBadRequest, "", "paths-info: "+err.Error())
			return
		}
		req.Paths, req.Expand = r.PostForm["paths"], truthy(r.PostForm.Get("expand"))
	}
	files, ok := s.listFiles(w, repo, commit)
	if !ok {
		return
	}
	byPath := make(map[string]Entry, len(files))
	for _, e := range files {
		byPath[e.Path] = e
	}
	var folders []string
	for i, p := range req.Paths {
		req.Paths[i] = strings.Trim(p, "/")
		if _, ok := byPath[req.Paths[i]]; !ok && req.Paths[i] != "" {
			folders = append(folders, req.Paths[i])
		}
	}
	trees, err := s.treeOIDs(filesUnder(files, folders))
	if err != nil {
		hubError(w, http.StatusInternalServerError, "", err.Error())
		return
	}
	var last *LastCommit
	if req.Expand {
		last = s.lastCommit(repo, commit)
	}
	out := []TreeEntry{}
	for _, p := range req.Paths {
		if e, ok := byPath[p]; ok {
			te, err := s.entry(e)
			if err != nil {
				hubError(w, http.StatusInternalServerError, "", err.Error())
				return
			}
			te.LastCommit = last
			out = append(out, te)
		} else if oid, ok := trees[p]; ok && p != "" {
			out = append(out, TreeEntry{Type: "directory", OID: oid, Path: p, LastCommit: last})
		}
	}
	writeJSON(w, out)
}

// handleCommits answers the commits API with the one commit the mirror
// knows of a revision.
func (s *Server) handleCommits(w http.ResponseWriter, r *http.Request) {
	repo, commit, ok := s.commitOf(w, r)
	if !ok {
		return
	}
	type commitInfo struct {
		ID      string   `json:"id"`
		Title   string   `json:"title"`
		Message string   `json:"message"`
		Authors []string `json:"authors"`
		Date    string   `json:"date"`
	}
	writeJSON(w, []commitInfo{{ID: commit, Title: commitTitle(commit), Message: "", Authors: []string{}, Date: hubTime(s.commitTime(repo, commit))}})
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
	repo, commit, files, ok := s.filesOf(w, r)
	if !ok {
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
	id := sha256.Sum256([]byte(repo))
	date := hubTime(s.commitTime(repo, commit))
	writeJSON(w, map[string]any{
		"_id": hex.EncodeToString(id[:12]), "id": repo, "modelId": repo, "author": strings.SplitN(repo, "/", 2)[0],
		"sha": commit, "lastModified": date, "createdAt": date, "private": false, "gated": false, "disabled": false,
		"downloads": 0, "likes": 0, "tags": []string{}, "siblings": sibs,
	})
}

func (s *Server) handleRefs(w http.ResponseWriter, r *http.Request) {
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
