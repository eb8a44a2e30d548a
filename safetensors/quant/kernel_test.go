package quant

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/drama-tts/drama/safetensors"
	"github.com/drama-tts/drama/safetensors/dtype"
)

// The worked example of the research notes: a tensor with amax 0.5 and one
// block of BF16 values.
func TestWorkedExample(t *testing.T) {
	blk := []float32{0.1000977, -0.0500488, 0.0125122, 0.03125, -0.0703125, 0, -0.0039063, 0.09375,
		0.0751953, -0.1000977, 0.0250244, 0.0500488, 0.0625, -0.0375977, 0.0009995, 0.0874023}
	for i := range blk {
		blk[i] = dtype.RoundBF16(blk[i])
	}
	g := GlobalScale(0.5)
	if got := math.Float32bits(g); got != 0x39430C31 {
		t.Fatalf("global scale bits: want 0x39430C31, got 0x%08X", got)
	}
	q, _ := NewNVFP4(1, 16)
	QuantizeNVFP4(q, blk, g)
	if q.Scales[0] != 0x6B {
		t.Errorf("scale byte: want 0x6B, got 0x%02X", q.Scales[0])
	}
	want := []byte{0xD7, 0x42, 0x0E, 0x78, 0xF6, 0x53, 0xC6, 0x70}
	if !bytes.Equal(q.Packed, want) {
		t.Errorf("packed: want % X, got % X", want, q.Packed)
	}
	deq := make([]float32, 16)
	q.Dequantize(deq)
	if math.Abs(float64(deq[0])-0.0982143) > 1e-6 || math.Abs(float64(deq[1])+0.0491071) > 1e-6 {
		t.Errorf("dequantized: got %v", deq[:3])
	}
}

func TestZeroBlockAndTensor(t *testing.T) {
	q, _ := NewNVFP4(1, 32)
	x := make([]float32, 32)
	x[16] = float32(math.Copysign(0, -1))
	x[17] = 1
	x[18] = -1e-6 // rounds to zero: negative-zero code
	QuantizeNVFP4(q, x, GlobalScale(1))
	if q.Scales[0] != 0x38 {
		t.Errorf("all-zero block scale: want 0x38, got 0x%02X", q.Scales[0])
	}
	if q.Packed[8] != 0x70 || q.Packed[9]&15 != 8 {
		t.Errorf("codes: want 70 x8, got % X", q.Packed[8:10])
	}
	if GlobalScale(0) != 1 {
		t.Errorf("GlobalScale(0): want 1, got %v", GlobalScale(0))
	}
	if _, err := NewNVFP4(2, 24); err == nil {
		t.Error("NewNVFP4 with 24 columns: want an error")
	}
}

func randomFP8(rng *rand.Rand, rows, cols int) *BlockFP8 {
	br, bc := BlockDims(rows, cols)
	b := &BlockFP8{Rows: rows, Cols: cols, Weight: make([]byte, rows*cols), ScaleInv: make([]float32, br*bc)}
	for i := range b.Weight {
		v := float32(rng.NormFloat64() * 40)
		b.Weight[i] = dtype.E4M3FromF32(max(min(v, 448), -448))
	}
	for i := range b.ScaleInv {
		b.ScaleInv[i] = float32(math.Exp(rng.NormFloat64()) * 1e-3)
	}
	for i := 0; i < len(b.Weight); i += 997 {
		b.Weight[i] = []byte{0x00, 0x80, 0x7E, 0xFE, 0x01, 0x81}[i%6]
	}
	return b
}

// The table kernel must give the same bytes as dequantize-then-quantize.
func TestLUTMatchesStraightforward(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dims := range [][2]int{{128, 128}, {200, 336}, {17, 16}, {300, 512}} {
		for _, bf16 := range []bool{true, false} {
			src := randomFP8(rng, dims[0], dims[1])
			if dims[0] == 200 { // zero 16-blocks and a whole negative-zero block
				for c := range 128 {
					src.Weight[c] = 0x80
				}
			}
			g := GlobalScale(src.Amax(bf16))
			x := make([]float32, dims[0]*dims[1])
			src.Dequantize(x, bf16)
			want, _ := NewNVFP4(dims[0], dims[1])
			QuantizeNVFP4(want, x, g)
			got, _ := NewNVFP4(dims[0], dims[1])
			QuantizeBlockFP8(got, src, g, bf16)
			if !bytes.Equal(got.Packed, want.Packed) || !bytes.Equal(got.Scales, want.Scales) {
				t.Errorf("%v bf16=%v: table kernel differs from the straightforward one", dims, bf16)
			}
			if amax, _ := Amax(x); amax != src.Amax(bf16) {
				t.Errorf("%v: Amax from bytes %v, from values %v", dims, src.Amax(bf16), amax)
			}
		}
	}
}

func TestBlockFP8Validate(t *testing.T) {
	b := randomFP8(rand.New(rand.NewPCG(3, 4)), 4, 32)
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	b.Weight[5] = 0xFF
	if err := b.Validate(); err == nil {
		t.Error("NaN byte: want an error")
	}
	b.Weight[5] = 0
	b.ScaleInv[0] = float32(math.Inf(1))
	if err := b.Validate(); err == nil {
		t.Error("infinite scale: want an error")
	}
	b.ScaleInv = nil
	if err := b.Validate(); err == nil {
		t.Error("missing scales: want an error")
	}
}

// fixture opens a testdata file made by scripts/make-quant-reference.py.
func fixture(t *testing.T, name string) *safetensors.ReadCloser {
	t.Helper()
	rc, err := safetensors.OpenReader("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	return rc
}

func tensorBytes(t *testing.T, r *safetensors.ReadCloser, name string) ([]byte, []int64) {
	t.Helper()
	tn, err := r.Tensor(name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tn.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b, tn.Shape
}

func f32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// Torch's casts of 196,608 float32 patterns, byte for byte.
func TestCodecsMatchTorch(t *testing.T) {
	r := fixture(t, "codecs.safetensors")
	in, _ := tensorBytes(t, r, "in")
	x := f32s(in)
	enc := map[string]func(float32) []byte{
		"bf16": func(f float32) []byte { return binary.LittleEndian.AppendUint16(nil, dtype.BF16FromF32(f)) },
		"f16":  func(f float32) []byte { return binary.LittleEndian.AppendUint16(nil, dtype.F16FromF32(f)) },
		"e4m3": func(f float32) []byte { return []byte{dtype.E4M3FromF32(f)} },
	}
	for name, fn := range enc {
		want, _ := tensorBytes(t, r, name)
		w := len(want) / len(x)
		bad := 0
		for i, f := range x {
			if got := fn(f); !bytes.Equal(got, want[i*w:(i+1)*w]) && bad < 5 {
				bad++
				t.Errorf("%s(0x%08X): torch % X, got % X", name, math.Float32bits(f), want[i*w:(i+1)*w], got)
			}
		}
	}
}

func loadFP8(t *testing.T, r *safetensors.ReadCloser, name string) *BlockFP8 {
	w, shape := tensorBytes(t, r, name+".weight")
	s, _ := tensorBytes(t, r, name+".weight_scale_inv")
	b := &BlockFP8{Rows: int(shape[0]), Cols: int(shape[1]), Weight: w, ScaleInv: f32s(s)}
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	return b
}

func expectNVFP4(t *testing.T, r *safetensors.ReadCloser, name string, got *NVFP4) {
	t.Helper()
	packed, _ := tensorBytes(t, r, name+".weight")
	scales, _ := tensorBytes(t, r, name+".weight_scale")
	g2, _ := tensorBytes(t, r, name+".weight_scale_2")
	if gb := math.Float32bits(got.Global); gb != binary.LittleEndian.Uint32(g2) {
		t.Errorf("%s: global scale: torch 0x%08X, got 0x%08X", name, binary.LittleEndian.Uint32(g2), gb)
	}
	if n := diff(scales, got.Scales); n > 0 {
		t.Errorf("%s: %d of %d scale bytes differ from torch", name, n, len(scales))
	}
	if n := diff(packed, got.Packed); n > 0 {
		t.Errorf("%s: %d of %d packed bytes differ from torch", name, n, len(packed))
	}
}

func diff(a, b []byte) int {
	if len(a) != len(b) {
		return max(len(a), len(b))
	}
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// NVFP4 from block FP8, gate and up sharing one global scale, with the BF16
// intermediate and without, against torch.
func TestFP8ToNVFP4MatchesTorch(t *testing.T) {
	src, want := fixture(t, "fp8-experts.safetensors"), fixture(t, "nvfp4-expected.safetensors")
	for e := range 2 {
		for _, path := range []string{"", "f32path."} {
			bf16 := path == ""
			m := map[string]*BlockFP8{}
			for _, p := range []string{"gate_proj", "up_proj", "down_proj"} {
				m[p] = loadFP8(t, src, "experts."+string(rune('0'+e))+"."+p)
			}
			gu := GlobalScale(max(m["gate_proj"].Amax(bf16), m["up_proj"].Amax(bf16)))
			for p, b := range m {
				g := gu
				if p == "down_proj" {
					g = GlobalScale(b.Amax(bf16))
				}
				q, _ := NewNVFP4(b.Rows, b.Cols)
				QuantizeBlockFP8(q, b, g, bf16)
				expectNVFP4(t, want, path+"experts."+string(rune('0'+e))+"."+p, q)
			}
		}
	}
	if a, b := loadFP8(t, src, "experts.1.gate_proj").Amax(true), loadFP8(t, src, "experts.1.up_proj").Amax(true); a >= b {
		t.Errorf("fixture: expert 1's amax should lie in up_proj (gate %v, up %v)", a, b)
	}
}

func bf16s(b []byte) []float32 {
	out := make([]float32, len(b)/2)
	dtype.DecodeBF16(out, b)
	return out
}

func TestDequantizeMatchesTorch(t *testing.T) {
	src, want := fixture(t, "fp8-experts.safetensors"), fixture(t, "nvfp4-expected.safetensors")
	b := loadFP8(t, src, "experts.0.gate_proj")
	x := make([]float32, b.Rows*b.Cols)
	b.Dequantize(x, true)
	ref, _ := tensorBytes(t, want, "deq.fp8.experts.0.gate_proj")
	enc := make([]byte, 2*len(x))
	dtype.EncodeBF16(enc, x)
	if n := diff(enc, ref); n > 0 {
		t.Errorf("FP8 dequantization: %d bytes differ from torch", n)
	}
	q, _ := NewNVFP4(b.Rows, b.Cols)
	packed, _ := tensorBytes(t, want, "experts.0.gate_proj.weight")
	scales, _ := tensorBytes(t, want, "experts.0.gate_proj.weight_scale")
	g2, _ := tensorBytes(t, want, "experts.0.gate_proj.weight_scale_2")
	q.Packed, q.Scales, q.Global = packed, scales, f32s(g2)[0]
	q.Dequantize(x)
	dtype.EncodeBF16(enc, x)
	ref, _ = tensorBytes(t, want, "deq.nvfp4.experts.0.gate_proj")
	if n := diff(enc, ref); n > 0 {
		t.Errorf("NVFP4 dequantization: %d bytes differ from torch", n)
	}
}

func TestBF16SourceAndFP8BlockMatchTorch(t *testing.T) {
	want := fixture(t, "nvfp4-expected.safetensors")
	xb, shape := tensorBytes(t, want, "bf16src.x")
	x := bf16s(xb)
	amax, err := Amax(x)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := NewNVFP4(int(shape[0]), int(shape[1]))
	QuantizeNVFP4(q, x, GlobalScale(amax))
	expectNVFP4(t, want, "bf16src", q)

	xb, shape = tensorBytes(t, want, "fp8blk.x")
	b := QuantizeFP8Block(bf16s(xb), int(shape[0]), int(shape[1]))
	w, _ := tensorBytes(t, want, "fp8blk.weight")
	s, _ := tensorBytes(t, want, "fp8blk.weight_scale_inv")
	if n := diff(w, b.Weight); n > 0 {
		t.Errorf("block FP8 weight: %d of %d bytes differ from torch", n, len(w))
	}
	for i, v := range f32s(s) {
		if b.ScaleInv[i] != v {
			t.Errorf("block FP8 scale %d: torch %v, got %v", i, v, b.ScaleInv[i])
		}
	}
}

// The threshold kernel must give the same codes as dividing each element,
// at and around every rounding bound, for many divisors.
func TestThresholdsMatchDivision(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	bounds := []float32{0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, 6}
	for range 3000 {
		div := float32(math.Ldexp(1+rng.Float64(), rng.IntN(60)-40))
		th := newThresholds(div)
		for _, b := range bounds {
			x := float32(float64(b) * float64(div))
			for d := -3; d <= 3; d++ {
				v := x
				for range abs(d) {
					v = math.Nextafter32(v, float32(math.Inf(d)))
				}
				for _, s := range []float32{v, -v} {
					if got, want := th.code(s), dtype.E2M1FromF32(s/div); got != want {
						t.Fatalf("div %v, x %v: threshold code 0x%X, division code 0x%X", div, s, got, want)
					}
				}
			}
		}
		for range 20 {
			v := float32(rng.NormFloat64()) * div * 3
			if got, want := th.code(v), dtype.E2M1FromF32(v/div); got != want {
				t.Fatalf("div %v, x %v: threshold code 0x%X, division code 0x%X", div, v, got, want)
			}
		}
	}
	// A subnormal negative whose quotient underflows to -0 keeps no sign.
	div := float32(4)
	v := -math.Float32frombits(1)
	if got, want := newThresholds(div).code(v), dtype.E2M1FromF32(v/div); got != want || got != 0 {
		t.Errorf("underflowing negative: want 0x%X (0), got 0x%X", want, got)
	}
}

func abs(d int) int {
	if d < 0 {
		return -d
	}
	return d
}

func TestQuantizeNVFP4MatchesDivision(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	x := make([]float32, 64*256)
	for i := range x {
		x[i] = dtype.RoundBF16(float32(rng.NormFloat64() * 0.02))
		if i%97 == 0 {
			x[i] = -math.Float32frombits(uint32(rng.IntN(1 << 20)))
		}
	}
	amax, _ := Amax(x)
	g := GlobalScale(amax)
	q, _ := NewNVFP4(64, 256)
	QuantizeNVFP4(q, x, g)
	want := make([]byte, len(q.Packed))
	for b := range len(q.Scales) {
		div := dtype.E4M3ToF32(q.Scales[b]) * g
		quantizeByDivision(want[b*8:(b+1)*8], x[b*16:(b+1)*16], div)
	}
	if n := diff(want, q.Packed); n > 0 {
		t.Errorf("%d packed bytes differ from the division path", n)
	}
}

func float32frombytes(b []byte) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(b))
}

func e4m3Div(code uint8, g float32) float32 { return dtype.E4M3ToF32(code) * g }

func TestMaxMagnitude(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for range 2000 {
		p := make([]byte, rng.IntN(40))
		for i := range p {
			p[i] = byte(rng.IntN(256))
		}
		var want uint8
		for _, b := range p {
			want = max(want, b&0x7F)
		}
		if got := maxMagnitude(p); got != want {
			t.Fatalf("maxMagnitude(% X): want %d, got %d", p, want, got)
		}
	}
}
