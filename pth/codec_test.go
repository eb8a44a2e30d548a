package pth

import (
	"slices"
	"strings"
	"testing"
)

func codecTensors(prefix string) []*Tensor {
	var ts []*Tensor
	for _, k := range codecKeys() {
		ts = append(ts, &Tensor{Name: prefix + k.name, DType: F32, Shape: k.shape})
	}
	return ts
}

func TestCheckCodec(t *testing.T) {
	rep := CheckCodec(codecTensors(""))
	if !rep.Recognized || !rep.Complete {
		t.Fatalf("full key set: %+v", rep)
	}
	g := rep.Geometry
	if g.SampleRate != 44100 || g.FrameSamples != 2048 || !slices.Equal(g.Codebooks, []int{4096, 1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024}) {
		t.Errorf("geometry %+v", g)
	}
	if !slices.Equal(g.EncoderRates, []int{2, 4, 8, 8}) || !slices.Equal(g.DecoderRates, []int{8, 8, 4, 2}) || !slices.Equal(g.Downsample, []int{2, 2}) {
		t.Errorf("rates %+v", g)
	}
	ts := codecTensors("")
	ts = append(ts[1:], &Tensor{Name: "extra.w", Shape: []int64{1}})
	ts[5].Shape = []int64{9}
	rep = CheckCodec(ts)
	if !rep.Recognized || rep.Complete || !slices.Equal(rep.Missing, []string{"encoder.block.0.conv.bias"}) ||
		!slices.Equal(rep.Unexpected, []string{"extra.w"}) || len(rep.Mismatched) != 1 {
		t.Errorf("damaged key set: %+v", rep)
	}
	if rep := CheckCodec([]*Tensor{{Name: "a", Shape: []int64{1}}}); rep.Recognized {
		t.Errorf("unrelated dict recognized: %+v", rep)
	}
	// A folded file has P+"weight" in place of each pair.
	var folded []*Tensor
	for _, x := range codecTensors("") {
		for _, pair := range [][2]string{{oldG, oldV}, {newG, newV}} {
			if strings.HasSuffix(x.Name, pair[0]) {
				x = nil
				break
			}
			if p, ok := strings.CutSuffix(x.Name, pair[1]); ok {
				x.Name = p + "weight"
			}
		}
		if x != nil {
			folded = append(folded, x)
		}
	}
	if rep := CheckCodec(folded); !rep.Complete || rep.Geometry.FrameSamples != 2048 {
		t.Errorf("folded codec: %+v", rep)
	}
}
