package quant

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/drama-tts/drama/internal/atomicfile"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/drama-tts/drama/safetensors"
	"github.com/drama-tts/drama/safetensors/dtype"
)

// SyntheticCheckpoint describes a deterministic Qwen3-MoE-shaped checkpoint
// with random weights, for tests, benchmarks and trying the tools without
// the real model: per layer a norm, an attention projection, a router, a
// shared expert and Experts routed experts ([Inter, Hidden] gate and up,
// [Hidden, Inter] down) in block FP8 (or BF16 with BF16Experts), plus
// embeddings and lm_head; layers spread over Shards shards (at most one
// shard per layer).
type SyntheticCheckpoint struct {
	Layers, Experts, Hidden, Inter int
	Shards                         int // 0 means 2
	BF16Experts                    bool
}

// Write writes the checkpoint's shards, index, config.json and
// tokenizer.json into dir, streaming each tensor's bytes.
func (s SyntheticCheckpoint) Write(dir string) error {
	shards := max(s.Shards, 1)
	if s.Shards == 0 {
		shards = 2
	}
	shards = min(shards, max(s.Layers, 1)) // no empty shard
	ix := &safetensors.Index{Metadata: map[string]json.RawMessage{}, WeightMap: map[string]string{}}
	var total int64
	for i, hs := range s.plan(shards) {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, shards)
		l, err := safetensors.Plan(hs, map[string]string{"format": "pt"})
		if err != nil {
			return err
		}
		if err := l.WriteFile(context.Background(), filepath.Join(dir, name), safetensors.SourceFunc(synthBytes), safetensors.WriteOptions{}); err != nil {
			return err
		}
		for _, h := range hs {
			ix.WeightMap[h.Name] = name
		}
		total += l.DataSize()
	}
	ix.Metadata["total_size"] = json.RawMessage(fmt.Sprint(total))
	b, _ := ix.Marshal()
	if err := atomicfile.WriteFile(filepath.Join(dir, safetensors.IndexName), b, 0o644); err != nil {
		return err
	}
	cfg := fmt.Sprintf(`{"model_type":"qwen3_moe","num_hidden_layers":%d,"num_experts":%d,"hidden_size":%d,"moe_intermediate_size":%d,"quantization_config":{"quant_method":"fp8","fmt":"e4m3","weight_block_size":[128,128]}}`+"\n",
		s.Layers, s.Experts, s.Hidden, s.Inter)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte("{\"synthetic\": true}\n"), 0o644)
}

// plan lists each shard's tensors.
func (s SyntheticCheckpoint) plan(shards int) [][]safetensors.TensorHeader {
	out := make([][]safetensors.TensorHeader, shards)
	h, in := int64(s.Hidden), int64(s.Inter)
	bf := func(name string, shape ...int64) safetensors.TensorHeader {
		return safetensors.TensorHeader{Name: name, DType: safetensors.BF16, Shape: shape}
	}
	out[0] = append(out[0], bf("model.embed_tokens.weight", 64, h))
	for l := range s.Layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		ts := []safetensors.TensorHeader{bf(p+"input_layernorm.weight", h), bf(p+"self_attn.o_proj.weight", h, h),
			bf(p+"mlp.gate.weight", int64(s.Experts), h), bf(p+"mlp.shared_expert.down_proj.weight", h, in)}
		for e := range s.Experts {
			for _, proj := range []string{"down_proj", "gate_proj", "up_proj"} {
				rows, cols := in, h
				if proj == "down_proj" {
					rows, cols = h, in
				}
				ts = append(ts, s.expert(fmt.Sprintf("%smlp.experts.%d.%s", p, e, proj), rows, cols)...)
			}
		}
		k := l * shards / max(s.Layers, 1)
		out[k] = append(out[k], ts...)
	}
	out[shards-1] = append(out[shards-1], bf("lm_head.weight", 64, h))
	return out
}

func (s SyntheticCheckpoint) expert(mod string, rows, cols int64) []safetensors.TensorHeader {
	if s.BF16Experts {
		return []safetensors.TensorHeader{{Name: mod + ".weight", DType: safetensors.BF16, Shape: []int64{rows, cols}}}
	}
	br, bc := BlockDims(int(rows), int(cols))
	return []safetensors.TensorHeader{{Name: mod + ".weight", DType: safetensors.F8E4M3, Shape: []int64{rows, cols}},
		{Name: mod + ".weight_scale_inv", DType: safetensors.F32, Shape: []int64{int64(br), int64(bc)}}}
}

// fp8Bytes maps a uniform byte to an FP8 code with a bell-shaped value
// distribution (never NaN).
var fp8Bytes = func() (t [256]byte) {
	for i := range t {
		u := (float64(i) + 0.5) / 256
		v := math.Sqrt2 * math.Erfinv(2*u-1) * 64 // normal quantile, sigma 64
		t[i] = dtype.E4M3FromF32(float32(max(min(v, 448), -448)))
	}
	return t
}()

// synthBytes generates a tensor's bytes from a seed derived from its name.
func synthBytes(_ context.Context, t *safetensors.PlannedTensor, w io.Writer) error {
	h := fnv.New64a()
	h.Write([]byte(t.Name))
	rng := rand.New(rand.NewPCG(h.Sum64(), 1))
	buf := make([]byte, min(t.Size, 1<<20))
	for left := t.Size; left > 0; left -= int64(len(buf)) {
		buf = buf[:min(int64(len(buf)), left)]
		fill(buf, t.DType, rng)
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

func fill(buf []byte, d safetensors.DType, rng *rand.Rand) {
	switch d {
	case safetensors.F8E4M3:
		for i := 0; i < len(buf); i += 8 {
			r := rng.Uint64()
			for j := i; j < min(i+8, len(buf)); j++ {
				buf[j] = fp8Bytes[byte(r)]
				r >>= 8
			}
		}
	case safetensors.F32: // block scales: positive, around 1e-3
		for i := 0; i+4 <= len(buf); i += 4 {
			v := float32(math.Exp(rng.NormFloat64()*0.5) * 1e-3)
			copy(buf[i:], f32Bytes(v))
		}
	default: // BF16, around N(0, 0.02)
		for i := 0; i+2 <= len(buf); i += 2 {
			v := dtype.BF16FromF32(float32(rng.NormFloat64() * 0.02))
			buf[i], buf[i+1] = byte(v), byte(v>>8)
		}
	}
}
