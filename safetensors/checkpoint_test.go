package safetensors

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeShards writes two shards and an index into dir.
func writeShards(t *testing.T, dir string, ix *Index) {
	t.Helper()
	hs, data := testTensors()
	for i, part := range [][]TensorHeader{hs[:3], hs[3:]} {
		l, err := Plan(part, nil)
		if err != nil {
			t.Fatal(err)
		}
		name := []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}[i]
		if err := l.WriteFile(context.Background(), filepath.Join(dir, name), bytesSource(data), WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := ix.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, IndexName), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func goodIndex() *Index {
	hs, _ := testTensors()
	ix := &Index{Metadata: map[string]json.RawMessage{"total_size": json.RawMessage("179")}, WeightMap: map[string]string{}}
	for i, h := range hs {
		ix.WeightMap[h.Name] = "model-00001-of-00002.safetensors"
		if i >= 3 {
			ix.WeightMap[h.Name] = "model-00002-of-00002.safetensors"
		}
	}
	return ix
}

func TestCheckpointConsistent(t *testing.T) {
	dir := t.TempDir()
	writeShards(t, dir, goodIndex())
	c, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ps := c.Check(); len(ps) != 0 {
		t.Errorf("problems in a consistent checkpoint: %v", ps)
	}
	if tn, err := c.Files[c.Index.WeightMap["ids"]].Tensor("ids"); err != nil || tn.DType != I64 {
		t.Errorf("ids through the index: %v %v", tn, err)
	}
	if len(c.Tensors()) != 7 {
		t.Errorf("Tensors: want 7, got %d", len(c.Tensors()))
	}
}

func TestCheckpointProblems(t *testing.T) {
	dir := t.TempDir()
	ix := goodIndex()
	delete(ix.WeightMap, "norm")
	ix.WeightMap["ghost"] = "model-00001-of-00002.safetensors"
	ix.WeightMap["ids"] = "model-00001-of-00002.safetensors"
	ix.Metadata["total_size"] = json.RawMessage("5")
	writeShards(t, dir, ix)
	os.WriteFile(filepath.Join(dir, "stray.safetensors"), file(`{}`, 0), 0o644)
	c, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []string
	for _, p := range c.Check() {
		got = append(got, p.String())
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{
		`tensor "ghost": named in model.safetensors.index.json but not in its shard`,
		`tensor "norm": in the shard but not in`,
		`tensor "ids": index names shard "model-00001-of-00002.safetensors", want "model-00002-of-00002.safetensors"`,
		"metadata.total_size: want 179 (the shards' tensor bytes), got 5",
		"stray.safetensors: a .safetensors file that model.safetensors.index.json does not name",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("missing problem %q in:\n%s", want, all)
		}
	}
}

func TestCheckpointOpenErrors(t *testing.T) {
	dir := t.TempDir()
	ix := goodIndex()
	ix.WeightMap["x"] = "model-00003-of-00002.safetensors"
	writeShards(t, dir, ix)
	if _, err := OpenCheckpoint(dir); !errors.Is(err, ErrMissingShard) || !strings.Contains(err.Error(), "model-00003-of-00002") {
		t.Errorf("missing shard: got %v", err)
	}
	ix.WeightMap["x"] = "../evil.safetensors"
	b, _ := ix.Marshal()
	os.WriteFile(filepath.Join(dir, IndexName), b, 0o644)
	if _, err := OpenCheckpoint(dir); !errors.Is(err, ErrFormat) {
		t.Errorf("path in weight_map: want ErrFormat, got %v", err)
	}
	os.WriteFile(filepath.Join(dir, IndexName), []byte(`{"metadata":{}}`), 0o644)
	if _, err := OpenCheckpoint(dir); !errors.Is(err, ErrFormat) {
		t.Errorf("no weight_map: want ErrFormat, got %v", err)
	}
	if _, err := OpenCheckpoint(t.TempDir()); err == nil {
		t.Error("empty directory: want an error")
	}
}

func TestIndexMarshalStable(t *testing.T) {
	a, _ := goodIndex().Marshal()
	b, _ := goodIndex().Marshal()
	if string(a) != string(b) || !strings.HasPrefix(string(a), "{\n  \"metadata\": {\n    \"total_size\": 179\n  },") {
		t.Errorf("index bytes: %s", a)
	}
}

func FuzzReadIndex(f *testing.F) {
	f.Add([]byte(`{"metadata":{"total_size":1},"weight_map":{"a":"m.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"a":"../x"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), IndexName)
		os.WriteFile(p, b, 0o644)
		ix, err := ReadIndex(p)
		if err != nil {
			return
		}
		for _, s := range ix.Shards() {
			if s != filepath.Base(s) {
				t.Fatalf("shard %q escapes the directory", s)
			}
		}
	})
}
