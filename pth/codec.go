package pth

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/drama-tts/drama/internal/model"
)

// codecKeysJSON lists the Drama 3 codec's state-dict keys as
// [name, shape, dtype] rows, as Fish Speech's modded DAC declares them.
//
//go:embed codec_keys.json
var codecKeysJSON []byte

// CodecSampleRate is the Drama codec's PCM sample rate. It is not stored in
// the weights.
const CodecSampleRate = model.SampleRate

// CodecGeometry is what the weights say about the codec.
type CodecGeometry struct {
	SampleRate   int     `json:"sample_rate"`
	FrameSamples int     `json:"frame_samples"` // samples per codebook frame
	FrameRate    float64 `json:"frame_rate"`    // frames per second
	Codebooks    []int   `json:"codebooks"`     // sizes, semantic first
	EncoderRates []int   `json:"encoder_rates"`
	DecoderRates []int   `json:"decoder_rates"`
	Downsample   []int   `json:"quantizer_downsample"`
}

// CodecReport compares a state dict with the Drama codec's keys.
type CodecReport struct {
	Recognized bool           `json:"recognized"` // most codec keys are present
	Complete   bool           `json:"complete"`   // every key present, none unexpected, shapes equal
	Missing    []string       `json:"missing,omitempty"`
	Unexpected []string       `json:"unexpected,omitempty"`
	Mismatched []string       `json:"mismatched,omitempty"` // "name: want [..], got [..]"
	Geometry   *CodecGeometry `json:"geometry,omitempty"`
}

type codecKey struct {
	name  string
	shape []int64
}

func codecKeys() []codecKey {
	var rows [][3]json.RawMessage
	if err := json.Unmarshal(codecKeysJSON, &rows); err != nil {
		panic("pth: embedded codec keys: " + err.Error())
	}
	out := make([]codecKey, len(rows))
	for i, r := range rows {
		json.Unmarshal(r[0], &out[i].name)
		json.Unmarshal(r[1], &out[i].shape)
	}
	return out
}

// CheckCodec compares tensors (after any prefix stripping) with the Drama
// codec's keys and shapes. A folded weight P+"weight" stands for its
// weight-norm pair. A state dict sharing fewer than half of the keys is not
// recognized, and then nothing else is reported.
func CheckCodec(ts []*Tensor) CodecReport {
	have := make(map[string][]int64, len(ts))
	for _, t := range ts {
		have[t.Name] = t.Shape
	}
	var rep CodecReport
	want := map[string]bool{}
	found := 0
	for _, k := range codecKeys() {
		name, shape := k.name, k.shape
		if got, ok := foldedShape(have, name, shape); ok {
			name, shape = got.name, got.shape
		}
		want[name] = true
		got, ok := have[name]
		switch {
		case !ok:
			rep.Missing = append(rep.Missing, name)
		case !slices.Equal(got, shape):
			found++
			rep.Mismatched = append(rep.Mismatched, fmt.Sprintf("%s: want %v, got %v", name, shape, got))
		default:
			found++
		}
	}
	for _, t := range ts {
		if !want[t.Name] {
			rep.Unexpected = append(rep.Unexpected, t.Name)
		}
	}
	rep.Recognized = 2*found >= len(want)
	if !rep.Recognized {
		return CodecReport{}
	}
	rep.Missing, rep.Unexpected = dedupe(rep.Missing), dedupe(rep.Unexpected)
	rep.Complete = len(rep.Missing)+len(rep.Unexpected)+len(rep.Mismatched) == 0
	rep.Geometry = codecGeometry(have)
	return rep
}

// foldedShape maps an expected weight-norm key to the folded P+"weight"
// when the state dict holds that instead.
func foldedShape(have map[string][]int64, name string, shape []int64) (codecKey, bool) {
	for _, s := range []string{oldG, oldV, newG, newV} {
		if p, ok := strings.CutSuffix(name, s); ok {
			if w, ok := have[p+"weight"]; ok {
				if s == oldG || s == newG {
					shape = w // g's shape is not the weight's; only presence matters
				}
				return codecKey{name: p + "weight", shape: shape}, true
			}
		}
	}
	return codecKey{}, false
}

func dedupe(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// codecGeometry reads the rates and codebook sizes off the shapes: a DAC
// strided convolution has kernel 2*stride, a quantizer resampling
// convolution kernel = factor.
func codecGeometry(have map[string][]int64) *CodecGeometry {
	g := &CodecGeometry{SampleRate: CodecSampleRate}
	for _, q := range []string{"quantizer.semantic_quantizer.quantizers.", "quantizer.quantizer.quantizers."} {
		for i := 0; ; i++ {
			s, ok := have[fmt.Sprintf("%s%d.codebook.weight", q, i)]
			if !ok || len(s) == 0 {
				break
			}
			g.Codebooks = append(g.Codebooks, int(s[0]))
		}
	}
	g.EncoderRates = kernels(have, "encoder.block.%d.block.4.conv.", 1, 2)
	g.DecoderRates = kernels(have, "decoder.model.%d.block.1.conv.", 1, 2)
	g.Downsample = kernels(have, "quantizer.downsample.%d.0.conv.", 0, 1)
	g.FrameSamples = 1
	for _, r := range append(slices.Clone(g.EncoderRates), g.Downsample...) {
		g.FrameSamples *= r
	}
	g.FrameRate = float64(g.SampleRate) / float64(g.FrameSamples)
	return g
}

// kernels returns last-axis kernel sizes / div of consecutive convolutions.
func kernels(have map[string][]int64, pattern string, from, div int) []int {
	var out []int
	for i := from; ; i++ {
		p := fmt.Sprintf(pattern, i)
		s, ok := have[p+newV]
		if !ok {
			s, ok = have[p+"weight"]
		}
		if !ok || len(s) == 0 {
			return out
		}
		out = append(out, int(s[len(s)-1])/div)
	}
}
