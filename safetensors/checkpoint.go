package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// IndexName is the index file of a sharded checkpoint.
const IndexName = "model.safetensors.index.json"

// SingleName is the file of an unsharded checkpoint.
const SingleName = "model.safetensors"

// Index is a model.safetensors.index.json: the shard of every tensor and
// free-form metadata, whose values are kept as raw JSON.
type Index struct {
	Metadata  map[string]json.RawMessage `json:"metadata"`
	WeightMap map[string]string          `json:"weight_map"`
}

// ReadIndex reads and checks an index file: a weight_map is required and
// every shard must be a plain file name in the index's directory.
func ReadIndex(path string) (*Index, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	var ix Index
	if err := json.Unmarshal(b, &ix); err != nil {
		return nil, &FormatError{File: path, Offset: -1, Msg: fmt.Sprintf("not a valid index: %v", err)}
	}
	if ix.WeightMap == nil {
		return nil, &FormatError{File: path, Offset: -1, Msg: `no "weight_map" object`}
	}
	for name, shard := range ix.WeightMap {
		if shard == "" || shard != filepath.Base(shard) || shard == "." || shard == ".." || strings.ContainsRune(shard, '\\') {
			return nil, &FormatError{File: path, Tensor: name, Offset: -1, Msg: fmt.Sprintf("shard %q is not a plain file name", shard)}
		}
	}
	return &ix, nil
}

// TotalSize returns metadata.total_size, if present and an integer.
func (ix *Index) TotalSize() (int64, bool) {
	var n int64
	raw, ok := ix.Metadata["total_size"]
	if !ok || json.Unmarshal(raw, &n) != nil {
		return 0, false
	}
	return n, true
}

// Shards returns the shard file names, sorted.
func (ix *Index) Shards() []string {
	set := map[string]bool{}
	for _, s := range ix.WeightMap {
		set[s] = true
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Marshal returns the index as indented JSON with sorted keys and a final
// newline: the same index always gives the same bytes.
func (ix *Index) Marshal() ([]byte, error) {
	meta := ix.Metadata
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		Metadata  map[string]json.RawMessage `json:"metadata"`
		WeightMap map[string]string          `json:"weight_map"`
	}{meta, ix.WeightMap}); err != nil {
		return nil, fmt.Errorf("safetensors: index: %w", err)
	}
	return b.Bytes(), nil
}

// Checkpoint is an open checkpoint directory: one file or indexed shards.
type Checkpoint struct {
	Dir   string
	Index *Index                 // nil for a single model.safetensors
	Files map[string]*ReadCloser // open shards by file name
	// Unindexed lists the .safetensors files in Dir that the index does
	// not name (sorted); they are not opened.
	Unindexed []string
}

// ErrMissingShard matches an index naming a shard file that does not exist.
var ErrMissingShard = errors.New("safetensors: missing shard")

// OpenCheckpoint opens dir's model.safetensors.index.json and every shard it
// names, or else dir's model.safetensors. A file path opens that one file.
func OpenCheckpoint(dir string) (*Checkpoint, error) {
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	} else if !fi.IsDir() {
		return openFiles(filepath.Dir(dir), nil, []string{filepath.Base(dir)})
	}
	ixPath := filepath.Join(dir, IndexName)
	if _, err := os.Stat(ixPath); err == nil {
		ix, err := ReadIndex(ixPath)
		if err != nil {
			return nil, err
		}
		c, err := openFiles(dir, ix, ix.Shards())
		if err == nil {
			c.Unindexed = unindexed(dir, c.Files)
		}
		return c, err
	}
	if _, err := os.Stat(filepath.Join(dir, SingleName)); err != nil {
		return nil, fmt.Errorf("safetensors: %s holds neither %s nor %s", dir, IndexName, SingleName)
	}
	return openFiles(dir, nil, []string{SingleName})
}

func openFiles(dir string, ix *Index, names []string) (*Checkpoint, error) {
	c := &Checkpoint{Dir: dir, Index: ix, Files: map[string]*ReadCloser{}}
	for _, n := range names {
		p := filepath.Join(dir, n)
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) && ix != nil {
			c.Close()
			return nil, fmt.Errorf("%w: %s names %q, which is not in %s", ErrMissingShard, IndexName, n, dir)
		}
		rc, err := OpenReader(p)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.Files[n] = rc
	}
	return c, nil
}

func unindexed(dir string, named map[string]*ReadCloser) []string {
	all, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	var out []string
	for _, p := range all {
		if _, ok := named[filepath.Base(p)]; !ok {
			out = append(out, filepath.Base(p))
		}
	}
	sort.Strings(out)
	return out
}

// Close closes every shard.
func (c *Checkpoint) Close() error {
	var errs []error
	for _, f := range c.Files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// ShardNames returns the open shard file names, sorted.
func (c *Checkpoint) ShardNames() []string {
	out := make([]string, 0, len(c.Files))
	for n := range c.Files {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Tensors returns every tensor of every shard, shards in name order and
// tensors in file order within each.
func (c *Checkpoint) Tensors() []*Tensor {
	var out []*Tensor
	for _, n := range c.ShardNames() {
		out = append(out, c.Files[n].Tensors...)
	}
	return out
}

// Problem is one inconsistency between an index and its shards.
type Problem struct {
	Tensor string `json:"tensor,omitempty"`
	Shard  string `json:"shard,omitempty"`
	Msg    string `json:"message"`
}

// String formats the problem as "shard: tensor \"name\": message".
func (p Problem) String() string {
	s := ""
	if p.Shard != "" {
		s += p.Shard + ": "
	}
	if p.Tensor != "" {
		s += fmt.Sprintf("tensor %q: ", p.Tensor)
	}
	return s + p.Msg
}

// Check compares the index with the shards: every tensor in weight_map must
// be in its shard, every shard tensor must be in weight_map under that shard,
// no other .safetensors file may lie beside them, and metadata.total_size
// (when present) must equal the data bytes. A
// single-file checkpoint has nothing to check. Problems are sorted.
func (c *Checkpoint) Check() []Problem {
	if c.Index == nil {
		return nil
	}
	var ps []Problem
	for name, shard := range c.Index.WeightMap {
		if _, err := c.Files[shard].Tensor(name); err != nil {
			ps = append(ps, Problem{Tensor: name, Shard: shard, Msg: "named in " + IndexName + " but not in its shard"})
		}
	}
	var total int64
	for _, t := range c.Tensors() {
		total += t.Size
	}
	for _, shard := range c.ShardNames() {
		for _, t := range c.Files[shard].Tensors {
			if got, ok := c.Index.WeightMap[t.Name]; !ok {
				ps = append(ps, Problem{Tensor: t.Name, Shard: shard, Msg: "in the shard but not in " + IndexName})
			} else if got != shard {
				ps = append(ps, Problem{Tensor: t.Name, Shard: shard, Msg: fmt.Sprintf("index names shard %q, want %q", got, shard)})
			}
		}
	}
	for _, n := range c.Unindexed {
		ps = append(ps, Problem{Shard: n, Msg: "a .safetensors file that " + IndexName + " does not name"})
	}
	if want, ok := c.Index.TotalSize(); ok && want != total {
		ps = append(ps, Problem{Msg: fmt.Sprintf("metadata.total_size: want %d (the shards' tensor bytes), got %d", total, want)})
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].String() < ps[j].String() })
	return ps
}
