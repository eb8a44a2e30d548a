package quant

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/safetensors"
)

// fuse writes a single-file checkpoint holding the same weights as the
// per-expert checkpoint src, with each layer's experts fused into
// gate_up_proj [E, 2I, H] and down_proj [E, H, I] (and their scales).
func fuse(t *testing.T, s synth, src map[string][]byte, dir string) {
	t.Helper()
	var hs []safetensors.TensorHeader
	data := map[string][]byte{}
	add := func(name string, d safetensors.DType, shape []int64, b []byte) {
		hs = append(hs, safetensors.TensorHeader{Name: name, DType: d, Shape: shape})
		data[name] = b
	}
	r := DefaultRecipe()
	for name, b := range src {
		if _, ok := r.Expert(name); !ok {
			add(name, safetensors.BF16, nil, b)
		}
	}
	shapes := synthShapes(s)
	for i := range hs {
		hs[i].Shape = shapes[hs[i].Name]
	}
	e, in, h := int64(s.experts), int64(s.inter), int64(s.hidden)
	for l := range s.layers {
		p := fmt.Sprintf("model.layers.%d.mlp.experts.", l)
		var gu, gus, dn, dns []byte
		for x := range s.experts {
			q := fmt.Sprintf("%s%d.", p, x)
			gu = append(append(gu, src[q+"gate_proj.weight"]...), src[q+"up_proj.weight"]...)
			gus = append(append(gus, src[q+"gate_proj.weight_scale_inv"]...), src[q+"up_proj.weight_scale_inv"]...)
			dn = append(dn, src[q+"down_proj.weight"]...)
			dns = append(dns, src[q+"down_proj.weight_scale_inv"]...)
		}
		add(p+"gate_up_proj", safetensors.F8E4M3, []int64{e, 2 * in, h}, gu)
		add(p+"gate_up_proj_scale_inv", safetensors.F32, []int64{e, 2 * in / 128, h / 128}, gus)
		add(p+"down_proj", safetensors.F8E4M3, []int64{e, h, in}, dn)
		add(p+"down_proj_scale_inv", safetensors.F32, []int64{e, h / 128, in / 128}, dns)
	}
	l, err := safetensors.Plan(hs, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := safetensors.SourceFunc(func(_ context.Context, pt *safetensors.PlannedTensor, w io.Writer) error {
		_, err := w.Write(data[pt.Name])
		return err
	})
	if err := l.WriteFile(context.Background(), filepath.Join(dir, safetensors.SingleName), w, safetensors.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// synthShapes returns the shape of every tensor of s.
func synthShapes(s synth) map[string][]int64 {
	out := map[string][]int64{}
	for _, shard := range s.tensors(rand.New(rand.NewPCG(1, 1))) {
		for _, st := range shard {
			out[st.h.Name] = st.h.Shape
		}
	}
	return out
}

// Fused experts give the same per-expert output as the same weights stored
// per expert.
func TestFusedExpertsMatchPerExpert(t *testing.T) {
	s := synth{layers: 2, experts: 4, hidden: 256, inter: 128, fp8: true}
	perDir, fusedDir := t.TempDir(), t.TempDir()
	src := s.write(t, perDir)
	fuse(t, s, src, fusedDir)
	keep := KeepList{0: {1, 3}, 1: {0}}
	outs := map[string]string{}
	for name, in := range map[string]string{"per": perDir, "fused": fusedDir} {
		outs[name] = filepath.Join(t.TempDir(), "o")
		res, err := Quantize(context.Background(), in, outs[name], Options{Target: ToNVFP4, Keep: keep})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.Converted != 9 || res.Kept != 3 || res.Pruned != 5 {
			t.Errorf("%s: %+v", name, res)
		}
	}
	per, _ := safetensors.OpenCheckpoint(outs["per"])
	defer per.Close()
	fused, _ := safetensors.OpenCheckpoint(outs["fused"])
	defer fused.Close()
	n := 0
	for _, tn := range per.Tensors() {
		if !strings.Contains(tn.Name, ".experts.") {
			continue
		}
		n++
		ft, err := tensorIn(fused, tn.Name)
		if err != nil {
			t.Fatalf("fused output lacks %s: %v", tn.Name, err)
		}
		a, _ := tn.Bytes()
		b, _ := ft.Bytes()
		if string(a) != string(b) {
			t.Errorf("%s differs between per-expert and fused sources", tn.Name)
		}
	}
	if n != 27 {
		t.Errorf("compared %d expert tensors, want 27", n)
	}
	if _, err := tensorIn(fused, "model.layers.0.mlp.experts.gate_up_proj"); err == nil {
		t.Error("the fused source tensor was copied into the output")
	}
	if rep, err := Check(context.Background(), fusedDir, outs["fused"], Options{Target: ToNVFP4}); err != nil || len(rep.Tensors) != 9 {
		t.Errorf("check of the fused conversion: %v, %d tensors", err, len(rep.Tensors))
	}
}

func TestFusedBadShapes(t *testing.T) {
	for _, tc := range []struct {
		hs   []safetensors.TensorHeader
		want string
	}{
		{[]safetensors.TensorHeader{{Name: "model.layers.0.mlp.experts.gate_up_proj", DType: safetensors.BF16, Shape: []int64{2, 16}}}, "want a 3-D"},
		{[]safetensors.TensorHeader{{Name: "model.layers.0.mlp.experts.gate_up_proj", DType: safetensors.BF16, Shape: []int64{2, 7, 16}}}, "gate and up halves"},
		{[]safetensors.TensorHeader{{Name: "model.layers.0.mlp.experts.down_proj_scale_inv", DType: safetensors.F32, Shape: []int64{2, 1, 1}}}, "no weight"},
	} {
		in, parent := t.TempDir(), t.TempDir()
		writeSingle(t, in, tc.hs...)
		_, err := Quantize(context.Background(), in, filepath.Join(parent, "o"), Options{Target: ToNVFP4})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: want an error containing %q, got %v", tc.hs[0].Shape, tc.want, err)
		}
	}
}
