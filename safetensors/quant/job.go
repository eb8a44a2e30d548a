package quant

import (
	"encoding/binary"
	"math"
	"sync"
	"sync/atomic"

	"github.com/drama-tts/drama/safetensors"
	"github.com/drama-tts/drama/safetensors/dtype"
)

// job computes the output tensors of a group of modules (an expert's gate
// and up projections, which share one NVFP4 global scale, or one module)
// once, hands each output to the writer, and drops the results when every
// output has been taken.
type job struct {
	once sync.Once
	run  func() (map[string][]byte, error)
	out  map[string][]byte
	err  error
	left atomic.Int32
	// bytes is about how much memory the job holds while it runs (its
	// inputs, intermediate floats and outputs), which bounds how many run
	// at once.
	bytes int64
}

func newJob(outputs int, run func() (map[string][]byte, error)) *job {
	j := &job{run: run}
	j.left.Store(int32(outputs))
	return j
}

// take returns the bytes of output name, computing the group on first use.
func (j *job) take(name string) ([]byte, error) {
	j.once.Do(func() { j.out, j.err = j.run() })
	if j.err != nil {
		return nil, j.err
	}
	b := j.out[name]
	if j.left.Add(-1) == 0 {
		j.out = nil
	}
	return b, nil
}

// output is one planned output tensor of a module.
type output struct {
	suffix string
	dtype  safetensors.DType
	shape  []int64
}

// outputsFor lists a module's output tensors for a target and layout.
func outputsFor(m *module, target Target, layout Layout) []output {
	r, c := int64(m.rows), int64(m.cols)
	switch target {
	case ToNVFP4:
		if layout == LayoutCompressedTensors {
			return []output{{"weight_packed", safetensors.U8, []int64{r, c / 2}},
				{"weight_scale", safetensors.F8E4M3, []int64{r, c / GroupSize}},
				{"weight_global_scale", safetensors.F32, []int64{1}}}
		}
		return []output{{"weight", safetensors.U8, []int64{r, c / 2}},
			{"weight_scale", safetensors.F8E4M3, []int64{r, c / GroupSize}},
			{"weight_scale_2", safetensors.F32, []int64{}}}
	case ToFP8Block:
		br, bc := BlockDims(m.rows, m.cols)
		return []output{{"weight", safetensors.F8E4M3, []int64{r, c}},
			{"weight_scale_inv", safetensors.F32, []int64{int64(br), int64(bc)}}}
	}
	return []output{{"weight", safetensors.BF16, []int64{r, c}}}
}

// nvfp4Group quantizes modules to NVFP4 with one global scale from their
// largest magnitude.
func nvfp4Group(mods []*module, layout Layout, bf16 bool) (map[string][]byte, error) {
	fp8 := make([]*BlockFP8, len(mods))
	xs := make([][]float32, len(mods))
	var amax float32
	for i, m := range mods {
		var err error
		if m.kind == srcFP8 {
			var maxb []uint8
			if fp8[i], maxb, err = m.loadFP8Max(); err != nil {
				return nil, err
			}
			amax = max(amax, fp8[i].amaxOf(maxb, bf16))
			continue
		}
		if xs[i], err = m.loadFloats(bf16); err != nil {
			return nil, err
		}
		a, _ := Amax(xs[i])
		amax = max(amax, a)
	}
	global := GlobalScale(amax)
	out := map[string][]byte{}
	for i, m := range mods {
		q, _ := NewNVFP4(m.rows, m.cols)
		if fp8[i] != nil {
			QuantizeBlockFP8(q, fp8[i], global, bf16)
		} else {
			QuantizeNVFP4(q, xs[i], global)
		}
		putNVFP4(out, m.ref.Module, q, layout)
	}
	return out, nil
}

func putNVFP4(out map[string][]byte, mod string, q *NVFP4, layout Layout) {
	out[mod+".weight_scale"] = q.Scales
	if layout == LayoutCompressedTensors {
		out[mod+".weight_packed"] = q.Packed
		out[mod+".weight_global_scale"] = f32Bytes(1 / q.Global)
		return
	}
	out[mod+".weight"] = q.Packed
	out[mod+".weight_scale_2"] = f32Bytes(q.Global)
}

// fp8Module converts one module to 128x128 block FP8.
func fp8Module(m *module, bf16 bool) (map[string][]byte, error) {
	x, err := m.loadFloats(bf16)
	if err != nil {
		return nil, err
	}
	b := QuantizeFP8Block(x, m.rows, m.cols)
	s := make([]byte, 0, 4*len(b.ScaleInv))
	for _, v := range b.ScaleInv {
		s = binary.LittleEndian.AppendUint32(s, math.Float32bits(v))
	}
	return map[string][]byte{m.ref.Module + ".weight": b.Weight, m.ref.Module + ".weight_scale_inv": s}, nil
}

// bf16Module dequantizes one module to BF16.
func bf16Module(m *module, bf16 bool) (map[string][]byte, error) {
	x, err := m.loadFloats(bf16)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 2*len(x))
	dtype.EncodeBF16(b, x)
	return map[string][]byte{m.ref.Module + ".weight": b}, nil
}

func f32Bytes(v float32) []byte { return binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)) }
