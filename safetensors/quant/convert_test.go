package quant

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/drama-tts/drama/safetensors"
	"github.com/drama-tts/drama/safetensors/dtype"
)

// synth describes a synthetic checkpoint: layers x experts routed experts
// of [inter, hidden] gate/up and [hidden, inter] down projections.
type synth struct {
	layers, experts, hidden, inter int
	fp8                            bool // block FP8 experts, else BF16
	mutate                         func(name string, b []byte) []byte
	skip                           func(name string) bool
}

type synthTensor struct {
	h    safetensors.TensorHeader
	data []byte
}

func (s synth) tensors(rng *rand.Rand) [][]synthTensor {
	bf16 := func(name string, shape ...int64) synthTensor {
		n := 1
		for _, d := range shape {
			n *= int(d)
		}
		b := make([]byte, 2*n)
		for i := range n {
			v := dtype.BF16FromF32(float32(rng.NormFloat64() * 0.02))
			b[2*i], b[2*i+1] = byte(v), byte(v>>8)
		}
		return synthTensor{safetensors.TensorHeader{Name: name, DType: safetensors.BF16, Shape: shape}, b}
	}
	shards := make([][]synthTensor, 2)
	shards[0] = append(shards[0], bf16("model.embed_tokens.weight", 32, int64(s.hidden)))
	for l := range s.layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		ts := []synthTensor{bf16(p+"input_layernorm.weight", int64(s.hidden)),
			bf16(p+"self_attn.q_proj.weight", int64(s.hidden), int64(s.hidden)),
			bf16(p+"mlp.gate.weight", int64(s.experts), int64(s.hidden)),
			bf16(p+"mlp.shared_expert.gate_proj.weight", int64(s.inter), int64(s.hidden))}
		for e := range s.experts {
			for _, proj := range []string{"down_proj", "gate_proj", "up_proj"} {
				rows, cols := s.inter, s.hidden
				if proj == "down_proj" {
					rows, cols = cols, rows
				}
				ts = append(ts, s.expert(rng, fmt.Sprintf("%smlp.experts.%d.%s", p, e, proj), rows, cols, bf16)...)
			}
		}
		shards[l%2] = append(shards[l%2], ts...)
	}
	shards[1] = append(shards[1], bf16("lm_head.weight", 32, int64(s.hidden)))
	return shards
}

func (s synth) expert(rng *rand.Rand, mod string, rows, cols int, bf16 func(string, ...int64) synthTensor) []synthTensor {
	if !s.fp8 {
		return []synthTensor{bf16(mod+".weight", int64(rows), int64(cols))}
	}
	b := randomFP8(rng, rows, cols)
	br, bc := BlockDims(rows, cols)
	sc := make([]byte, 0, 4*len(b.ScaleInv))
	for _, v := range b.ScaleInv {
		sc = append(sc, f32Bytes(v)...)
	}
	return []synthTensor{
		{safetensors.TensorHeader{Name: mod + ".weight", DType: safetensors.F8E4M3, Shape: []int64{int64(rows), int64(cols)}}, b.Weight},
		{safetensors.TensorHeader{Name: mod + ".weight_scale_inv", DType: safetensors.F32, Shape: []int64{int64(br), int64(bc)}}, sc},
	}
}

// write writes the checkpoint into dir with an index, a config and a
// tokenizer file, and returns the tensors' bytes by name.
func (s synth) write(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	all := map[string][]byte{}
	ix := &safetensors.Index{Metadata: map[string]json.RawMessage{"note": json.RawMessage(`"kept"`)}, WeightMap: map[string]string{}}
	var total int64
	for i, shard := range s.tensors(rand.New(rand.NewPCG(7, 8))) {
		name := fmt.Sprintf("model-%05d-of-00002.safetensors", i+1)
		var hs []safetensors.TensorHeader
		for _, st := range shard {
			if s.skip != nil && s.skip(st.h.Name) {
				continue
			}
			if s.mutate != nil {
				st.data = s.mutate(st.h.Name, st.data)
			}
			hs = append(hs, st.h)
			all[st.h.Name] = st.data
			ix.WeightMap[st.h.Name] = name
			total += int64(len(st.data))
		}
		l, err := safetensors.Plan(hs, map[string]string{"format": "pt"})
		if err != nil {
			t.Fatal(err)
		}
		src := safetensors.SourceFunc(func(_ context.Context, pt *safetensors.PlannedTensor, w io.Writer) error {
			_, err := w.Write(all[pt.Name])
			return err
		})
		if err := l.WriteFile(context.Background(), filepath.Join(dir, name), src, safetensors.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ix.Metadata["total_size"] = json.RawMessage(fmt.Sprint(total))
	b, _ := ix.Marshal()
	os.WriteFile(filepath.Join(dir, safetensors.IndexName), b, 0o644)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type":"qwen3_moe","quantization_config":{"quant_method":"fp8"}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(`{"tok":1}`), 0o644)
	return all
}

var small = synth{layers: 2, experts: 8, hidden: 256, inter: 128, fp8: true}

func dirSums(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		out[e.Name()] = sha256.Sum256(b)
	}
	return out
}

func TestQuantizePruneEndToEnd(t *testing.T) {
	in := t.TempDir()
	src := small.write(t, in)
	keep := KeepList{0: {0, 2, 5}, 1: {1, 7}}
	var sums []map[string][32]byte
	for _, workers := range []int{1, 8} {
		out := filepath.Join(t.TempDir(), "out")
		res, err := Quantize(context.Background(), in, out, Options{Target: ToNVFP4, Keep: keep, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		if res.Kept != 5 || res.Pruned != 11 || res.Converted != 15 {
			t.Errorf("result: kept %d pruned %d converted %d, want 5, 11, 15", res.Kept, res.Pruned, res.Converted)
		}
		sums = append(sums, dirSums(t, out))
		if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("output directory mode: want 0755, got %v (%v)", fi.Mode(), err)
		}
		if workers == 8 {
			checkOutput(t, in, out, src, keep)
		}
	}
	if !reflect.DeepEqual(sums[0], sums[1]) {
		t.Error("output differs between 1 and 8 workers")
	}
}

func checkOutput(t *testing.T, in, out string, src map[string][]byte, keep KeepList) {
	c, err := safetensors.OpenCheckpoint(out)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ps := c.Check(); len(ps) != 0 {
		t.Errorf("output index problems: %v", ps)
	}
	r := DefaultRecipe()
	for name, b := range src {
		if _, isExpert := r.Expert(name); isExpert {
			continue
		}
		tn, err := tensorIn(c, name)
		if err != nil {
			t.Fatalf("pass-through %s: %v", name, err)
		}
		if got, _ := tn.Bytes(); string(got) != string(b) {
			t.Errorf("pass-through %s is not byte-identical", name)
		}
	}
	if _, err := tensorIn(c, "model.layers.0.mlp.experts.1.gate_proj.weight"); !errors.Is(err, safetensors.ErrNotFound) {
		t.Errorf("pruned expert present: %v", err)
	}
	tn, err := tensorIn(c, "model.layers.1.mlp.experts.7.down_proj.weight_scale")
	if err != nil || tn.DType != safetensors.F8E4M3 || !reflect.DeepEqual(tn.Shape, []int64{256, 8}) {
		t.Errorf("down_proj scale: %v %v", tn, err)
	}
	ix, _ := safetensors.ReadIndex(filepath.Join(out, safetensors.IndexName))
	var got KeepList
	json.Unmarshal(ix.Metadata["drama_experts"], &got)
	if !reflect.DeepEqual(got, keep) || string(ix.Metadata["note"]) != `"kept"` {
		t.Errorf("index metadata: drama_experts %v, note %s", got, ix.Metadata["note"])
	}
	if b, _ := os.ReadFile(filepath.Join(out, "tokenizer.json")); string(b) != `{"tok":1}` {
		t.Errorf("tokenizer.json not copied: %q", b)
	}
	var cfg map[string]map[string]any
	b, _ := os.ReadFile(filepath.Join(out, "config.json"))
	json.Unmarshal(b, &cfg)
	if cfg["quantization_config"]["quant_algo"] != "NVFP4" {
		t.Errorf("config.json quantization_config: %v", cfg["quantization_config"])
	}
	rep, err := Check(context.Background(), in, out, Options{Target: ToNVFP4})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Tensors) != 15 || rep.MaxNMSE > 0.02 || rep.MaxNMSE <= 0 {
		t.Errorf("check: %d tensors, max NMSE %v", len(rep.Tensors), rep.MaxNMSE)
	}
}

// The expert's bytes equal the kernel run directly, gate and up sharing the
// global scale of the larger amax.
func TestQuantizeExpertBytes(t *testing.T) {
	in, out := t.TempDir(), filepath.Join(t.TempDir(), "o")
	small.write(t, in)
	if _, err := Quantize(context.Background(), in, out, Options{Target: ToNVFP4, Layout: LayoutCompressedTensors}); err != nil {
		t.Fatal(err)
	}
	ic, _ := safetensors.OpenCheckpoint(in)
	defer ic.Close()
	oc, _ := safetensors.OpenCheckpoint(out)
	defer oc.Close()
	load := func(mod string) *BlockFP8 {
		m := &module{tensors: map[string]*safetensors.Tensor{}}
		m.tensors["weight"], _ = tensorIn(ic, mod+".weight")
		m.tensors["weight_scale_inv"], _ = tensorIn(ic, mod+".weight_scale_inv")
		m.ref.Module = mod
		if err := m.classify(); err != nil {
			t.Fatal(err)
		}
		b, err := m.loadFP8()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	p := "model.layers.1.mlp.experts.3."
	gate, up := load(p+"gate_proj"), load(p+"up_proj")
	g := GlobalScale(max(gate.Amax(true), up.Amax(true)))
	q, _ := NewNVFP4(up.Rows, up.Cols)
	QuantizeBlockFP8(q, up, g, true)
	tn, _ := tensorIn(oc, p+"up_proj.weight_packed")
	packed, _ := tn.Bytes()
	tn, _ = tensorIn(oc, p+"gate_proj.weight_global_scale")
	gs, _ := tn.Bytes()
	if string(packed) != string(q.Packed) {
		t.Error("up_proj packed bytes differ from the kernel's")
	}
	if got := math.Float32frombits(uint32(gs[0]) | uint32(gs[1])<<8 | uint32(gs[2])<<16 | uint32(gs[3])<<24); got != 1/g {
		t.Errorf("gate weight_global_scale: want 1/%v, got %v", g, got)
	}
}

func TestFP8BlockAndDequantize(t *testing.T) {
	in := t.TempDir()
	s := small
	s.fp8 = false
	s.write(t, in)
	fp8 := filepath.Join(t.TempDir(), "fp8")
	if _, err := Quantize(context.Background(), in, fp8, Options{Target: ToFP8Block}); err != nil {
		t.Fatal(err)
	}
	rep, err := Check(context.Background(), in, fp8, Options{Target: ToFP8Block})
	if err != nil || rep.MaxNMSE > 0.01 {
		t.Fatalf("fp8-block check: max NMSE %v, %v", rep.MaxNMSE, err)
	}
	none := filepath.Join(t.TempDir(), "none.json")
	os.WriteFile(none, []byte(`{"name":"none","roles":{"expert":"^none\\.(?P<module>(?P<layer>\\d)(?P<expert>\\d)(?P<proj>x))$","fused_expert":"^none(?P<module>)(?P<layer>)(?P<proj>)$"}}`), 0o644)
	r, err := LoadRecipe(none)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Check(context.Background(), in, fp8, Options{Target: ToFP8Block, Recipe: r}); !errors.Is(err, ErrCheckFailed) {
		t.Errorf("check finding no projection: want ErrCheckFailed, got %v", err)
	}
	back := filepath.Join(t.TempDir(), "bf16")
	if _, err := Quantize(context.Background(), fp8, back, Options{Target: ToBF16}); err != nil {
		t.Fatal(err)
	}
	nv := filepath.Join(t.TempDir(), "nv")
	if _, err := Quantize(context.Background(), back, nv, Options{Target: ToNVFP4}); err != nil {
		t.Fatal(err)
	}
	if _, err := Quantize(context.Background(), nv, filepath.Join(t.TempDir(), "x"), Options{Target: ToNVFP4}); err == nil ||
		!strings.Contains(err.Error(), "dequantize it first") {
		t.Errorf("NVFP4 source to NVFP4: got %v", err)
	}
	c, _ := safetensors.OpenCheckpoint(back)
	defer c.Close()
	if tn, err := tensorIn(c, "model.layers.0.mlp.experts.0.up_proj.weight"); err != nil || tn.DType != safetensors.BF16 {
		t.Errorf("dequantized expert: %v %v", tn, err)
	}
}

func TestQuantizeBadInput(t *testing.T) {
	nan := func(name string, b []byte) []byte {
		if strings.HasSuffix(name, "experts.2.up_proj.weight") {
			b[100] = 0x7F
		}
		return b
	}
	odd := small
	odd.hidden = 136 // down_proj input columns: 128 is fine; gate/up: 136 is not a multiple of 16? it is 8.5x16
	tests := []struct {
		name string
		s    synth
		opts Options
		prep func(dir string)
		want string
	}{
		{"missing scale", synth{2, 8, 256, 128, true, nil, func(n string) bool { return strings.HasSuffix(n, "experts.4.down_proj.weight_scale_inv") }},
			Options{Target: ToNVFP4}, nil, "without its scale tensor"},
		{"not a multiple of 16", odd, Options{Target: ToNVFP4}, nil, "not a multiple of 16"},
		{"missing shard", small, Options{Target: ToNVFP4}, func(d string) { os.Remove(filepath.Join(d, "model-00002-of-00002.safetensors")) }, "missing shard"},
		{"NaN in source", synth{2, 8, 256, 128, true, nan, nil}, Options{Target: ToNVFP4}, nil, "NaN"},
		{"unknown expert", small, Options{Target: ToNVFP4, Keep: KeepList{0: {0, 8}, 1: {1}}}, nil, "expert 8 does not exist"},
		{"layer missing from keep list", small, Options{Target: ToNVFP4, Keep: KeepList{0: {0}}}, nil, "no entry for layer 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, parent := t.TempDir(), t.TempDir()
			tt.s.write(t, in)
			if tt.prep != nil {
				tt.prep(in)
			}
			_, err := Quantize(context.Background(), in, filepath.Join(parent, "out"), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want an error containing %q, got %v", tt.want, err)
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 0 {
				t.Errorf("left behind: %v", entries)
			}
		})
	}
	out := t.TempDir()
	os.WriteFile(filepath.Join(out, "x"), nil, 0o644)
	if _, err := Quantize(context.Background(), t.TempDir(), out, Options{Target: ToNVFP4}); err == nil {
		t.Error("empty input: want an error")
	}
}

func TestCoverage(t *testing.T) {
	st := RouterStats{0: {1, 5, 2, 2, 0}, 1: {3, 3, 3, 1}}
	got, err := Coverage(st, 0.7)
	if err != nil {
		t.Fatal(err)
	}
	// layer 0: total 10, 5+2 = 7 >= 7 with the lower of the tied 2s (id 2);
	// layer 1: total 10, 3+3+3 = 9 >= 7, ids 0, 1 first on the tie.
	want := KeepList{0: {1, 2}, 1: {0, 1, 2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Coverage: want %v, got %v", want, got)
	}
	all, _ := Coverage(st, 1)
	if len(all[0]) != 4 || len(all[1]) != 4 {
		t.Errorf("coverage 1 keeps every expert with weight: %v", all)
	}
	for _, c := range []float64{0, -0.1, 1.01, math.NaN()} {
		if _, err := Coverage(st, c); !errors.Is(err, ErrKeepList) {
			t.Errorf("coverage %v: want ErrKeepList, got %v", c, err)
		}
	}
	if _, err := Coverage(RouterStats{0: {0, 0}}, 0.5); err == nil {
		t.Error("all-zero layer: want an error")
	}
	if _, err := Coverage(RouterStats{0: {1, -1}}, 0.5); err == nil {
		t.Error("negative weight: want an error")
	}
}

func TestKeepListJSON(t *testing.T) {
	k := KeepList{10: {3, 1}, 2: {0}}
	b, _ := json.Marshal(k)
	var back KeepList
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"2":[0],"10":[3,1]}` || !sort.IntsAreSorted(back[10]) {
		t.Errorf("keep list JSON: %s -> %v", b, back)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "ix.json"), []byte(`{"metadata":{"drama_experts":{"0":[1,2]}},"weight_map":{}}`), 0o644)
	if k, err := ReadKeepList(filepath.Join(dir, "ix.json")); err != nil || !reflect.DeepEqual(k, KeepList{0: {1, 2}}) {
		t.Errorf("keep list from an index: %v %v", k, err)
	}
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"x":[1]}`), 0o644)
	if _, err := ReadKeepList(filepath.Join(dir, "bad.json")); !errors.Is(err, ErrKeepList) {
		t.Errorf("bad keep list: %v", err)
	}
}

func TestRecipe(t *testing.T) {
	r := DefaultRecipe()
	tests := map[string]Role{
		"model.layers.3.mlp.experts.17.gate_proj.weight": RoleExpert,
		"model.layers.3.mlp.gate.weight":                 RoleRouter,
		"model.layers.3.mlp.shared_expert_gate.weight":   RoleSharedExpert,
		"model.layers.3.linear_attn.in_proj.weight":      RoleAttention,
		"model.layers.3.post_attention_layernorm.weight": RoleNorm,
		"model.embed_tokens.weight":                      RoleEmbedding,
		"lm_head.weight":                                 RoleLMHead,
		"model.rotary.inv_freq":                          RoleOther,
	}
	for name, want := range tests {
		if got := r.Role(name); got != want {
			t.Errorf("Role(%s): want %s, got %s", name, want, got)
		}
	}
	ref, _ := r.Expert("model.layers.3.mlp.experts.17.up_proj.weight_scale_inv")
	if ref.Layer != 3 || ref.Expert != 17 || ref.Proj != "up_proj" || ref.Suffix != "weight_scale_inv" {
		t.Errorf("Expert: %+v", ref)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "r.json"), []byte(`{"roles":{"expert":"^(?P<module>blk\\.(?P<layer>\\d+)\\.ffn\\.(?P<expert>\\d+)\\.(?P<proj>w1|w2|w3))\\."},"gate":"w1","up":"w3","down":"w2"}`), 0o644)
	cr, err := LoadRecipe(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	if ref, ok := cr.Expert("blk.1.ffn.4.w3.weight"); !ok || ref.Proj != "w3" || cr.Role("lm_head.weight") != RoleLMHead {
		t.Errorf("custom recipe: %+v %v", ref, ok)
	}
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"roles":{"expert":"^(?P<module>x)"}}`), 0o644)
	if _, err := LoadRecipe(filepath.Join(dir, "bad.json")); err == nil || !strings.Contains(err.Error(), "named group") {
		t.Errorf("recipe without groups: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "null.json"), []byte(`{"name":"n","roles":null}`), 0o644)
	if nr, err := LoadRecipe(filepath.Join(dir, "null.json")); err != nil || nr.Role("lm_head.weight") != RoleLMHead {
		t.Errorf(`"roles": null: want the default roles, got %v`, err)
	}
}

// writeSingle writes model.safetensors with the given BF16 tensors (zeros).
func writeSingle(t *testing.T, dir string, hs ...safetensors.TensorHeader) {
	t.Helper()
	l, err := safetensors.Plan(hs, nil)
	if err != nil {
		t.Fatal(err)
	}
	src := safetensors.SourceFunc(func(_ context.Context, pt *safetensors.PlannedTensor, w io.Writer) error {
		_, err := w.Write(make([]byte, pt.Size))
		return err
	})
	if err := l.WriteFile(context.Background(), filepath.Join(dir, safetensors.SingleName), src, safetensors.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestQuantizeSingleFile(t *testing.T) {
	in := t.TempDir()
	writeSingle(t, in,
		safetensors.TensorHeader{Name: "model.layers.0.mlp.experts.0.gate_proj.weight", DType: safetensors.BF16, Shape: []int64{4, 32}},
		safetensors.TensorHeader{Name: "model.layers.0.mlp.experts.0.gate_proj.bias", DType: safetensors.BF16, Shape: []int64{4}},
		safetensors.TensorHeader{Name: "lm_head.weight", DType: safetensors.BF16, Shape: []int64{2, 32}})
	out := filepath.Join(t.TempDir(), "o")
	res, err := Quantize(context.Background(), in, out, Options{Target: ToNVFP4})
	if err != nil {
		t.Fatal(err)
	}
	if res.Converted != 1 || res.PassThrough != 2 {
		t.Errorf("result: %+v", res)
	}
	c, err := safetensors.OpenCheckpoint(out)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Index == nil || len(c.Check()) != 0 {
		t.Errorf("single-file output: index %v, problems %v", c.Index, c.Check())
	}
	tn, err := tensorIn(c, "model.layers.0.mlp.experts.0.gate_proj.weight_scale")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := tn.Bytes(); b[0] != 0x38 {
		t.Errorf("all-zero weight: scale byte want 0x38, got 0x%02X", b[0])
	}
	if _, err := tensorIn(c, "model.layers.0.mlp.experts.0.gate_proj.bias"); err != nil {
		t.Errorf("bias of a kept expert should pass through: %v", err)
	}
}

func TestQuantizeNoExperts(t *testing.T) {
	in, parent := t.TempDir(), t.TempDir()
	writeSingle(t, in, safetensors.TensorHeader{Name: "model.layers.0.ffn.w1.weight", DType: safetensors.BF16, Shape: []int64{8, 16}})
	_, err := Quantize(context.Background(), in, filepath.Join(parent, "o"), Options{Target: ToNVFP4})
	if !errors.Is(err, ErrNoExperts) || !strings.Contains(err.Error(), "--recipe") {
		t.Errorf("want ErrNoExperts pointing at --recipe, got %v", err)
	}
}

func TestQuantizeBadShapes(t *testing.T) {
	for _, shape := range [][]int64{{0, 32}, {2, 16, 16}, {32}} {
		in, parent := t.TempDir(), t.TempDir()
		writeSingle(t, in, safetensors.TensorHeader{Name: "model.layers.0.mlp.experts.0.up_proj.weight", DType: safetensors.BF16, Shape: shape})
		_, err := Quantize(context.Background(), in, filepath.Join(parent, "o"), Options{Target: ToNVFP4})
		if !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), "up_proj.weight") {
			t.Errorf("shape %v: want ErrShape naming the tensor, got %v", shape, err)
		}
		if entries, _ := os.ReadDir(parent); len(entries) != 0 {
			t.Errorf("left behind: %v", entries)
		}
	}
}

func TestQuantizeProgressAndCancel(t *testing.T) {
	in := t.TempDir()
	small.write(t, in)
	var calls, last, total int64
	opts := Options{Target: ToNVFP4, Progress: func(done, tot int64) {
		if done < last {
			t.Errorf("progress went back: %d after %d", done, last)
		}
		calls, last, total = calls+1, done, tot
	}}
	res, err := Quantize(context.Background(), in, filepath.Join(t.TempDir(), "o"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if calls == 0 || last != total || total != res.BytesOut {
		t.Errorf("progress: %d calls, last %d of %d, output %d bytes", calls, last, total, res.BytesOut)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	parent := t.TempDir()
	if _, err := Quantize(ctx, in, filepath.Join(parent, "o"), Options{Target: ToNVFP4}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: want context.Canceled, got %v", err)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("left behind after cancel: %v", entries)
	}
}

func TestFP8PassThroughCounted(t *testing.T) {
	in := t.TempDir()
	writeSingle(t, in,
		safetensors.TensorHeader{Name: "model.layers.0.mlp.experts.0.gate_proj.weight", DType: safetensors.BF16, Shape: []int64{4, 32}},
		safetensors.TensorHeader{Name: "model.layers.0.self_attn.q_proj.weight", DType: safetensors.F8E4M3, Shape: []int64{4, 32}})
	res, err := Quantize(context.Background(), in, filepath.Join(t.TempDir(), "o"), Options{Target: ToNVFP4})
	if err != nil || res.FP8PassThrough != 1 {
		t.Errorf("want 1 FP8 pass-through tensor, got %+v, %v", res, err)
	}
}

// tensorIn finds a tensor of c by name: through the index when there is
// one, else in the first shard that holds it.
func tensorIn(c *safetensors.Checkpoint, name string) (*safetensors.Tensor, error) {
	if c.Index != nil {
		shard, ok := c.Index.WeightMap[name]
		if !ok {
			return nil, fmt.Errorf("%w: %q is not in %s", safetensors.ErrNotFound, name, safetensors.IndexName)
		}
		return c.Files[shard].Tensor(name)
	}
	for _, f := range c.Files {
		if t, err := f.Tensor(name); err == nil {
			return t, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", safetensors.ErrNotFound, name)
}
