package dtype

import (
	"math"
	"os"
	"runtime"
	"sort"
	"sync"
	"testing"

	"github.com/x448/float16"
)

// grid is an independent nearest-even oracle for a rounding format: vals
// holds the value of every non-negative finite code in code order, followed
// by one virtual value standing for the overflow code.
type grid struct {
	name string
	vals []float64
	enc  func(float32) uint32
}

func (g grid) want(x float64) uint32 {
	n := len(g.vals) - 1
	if x >= g.vals[n] {
		return uint32(n)
	}
	i := sort.SearchFloat64s(g.vals, x) // vals[i] >= x
	if g.vals[i] == x {
		return uint32(i)
	}
	lo, hi := g.vals[i-1], g.vals[i]
	switch dl, dh := x-lo, hi-x; {
	case dl < dh:
		return uint32(i - 1)
	case dh < dl:
		return uint32(i)
	case (i-1)%2 == 0:
		return uint32(i - 1)
	}
	return uint32(i)
}

func makeGrid(name string, last int, dec func(uint32) float64, virtual float64, enc func(float32) uint32) grid {
	g := grid{name: name, enc: enc}
	for c := 0; c <= last; c++ {
		g.vals = append(g.vals, dec(uint32(c)))
	}
	g.vals = append(g.vals, virtual)
	return g
}

func grids() []grid {
	return []grid{
		makeGrid("bf16", 0x7F7F, func(c uint32) float64 { return float64(BF16ToF32(uint16(c))) }, math.Ldexp(1, 128),
			func(f float32) uint32 { return uint32(BF16FromF32(f)) }),
		makeGrid("f16", 0x7BFF, func(c uint32) float64 { return float64(F16ToF32(uint16(c))) }, 65536,
			func(f float32) uint32 { return uint32(F16FromF32(f)) }),
		makeGrid("e4m3", 0x7E, func(c uint32) float64 { return float64(E4M3ToF32(uint8(c))) }, 480,
			func(f float32) uint32 { return uint32(E4M3FromF32(f)) }),
	}
}

// check compares the encoder with the oracle for the finite float32 bits u.
func (g grid) check(t *testing.T, u uint32) bool {
	f := math.Float32frombits(u)
	if f != f || math.IsInf(float64(f), 0) {
		return true
	}
	want := g.want(math.Abs(float64(f)))
	got := g.enc(f)
	signBit := uint32(0x80)
	if g.name == "bf16" || g.name == "f16" {
		signBit = 0x8000
	}
	if u>>31 == 1 {
		want |= signBit
	}
	if got != want {
		t.Errorf("%s(%g = 0x%08X): want 0x%X, got 0x%X", g.name, f, u, want, got)
		return false
	}
	return true
}

// TestEncodersAgainstOracle checks every float32 whose low 16 bits are one
// of the patterns around rounding boundaries (ties, just below, just above),
// for every high half: every exponent, sign and leading mantissa pattern.
// Set DRAMA_EXHAUSTIVE=1 (or to one format name: bf16, f16, e4m3)
// to check all 2^32 inputs instead.
func TestEncodersAgainstOracle(t *testing.T) {
	lows := []uint32{0, 1, 0x0FFF, 0x1000, 0x1001, 0x7FFF, 0x8000, 0x8001, 0xEFFF, 0xF000, 0xFFFF, 0x5A5A}
	exhaustive := os.Getenv("DRAMA_EXHAUSTIVE")
	for _, g := range grids() {
		t.Run(g.name, func(t *testing.T) {
			if exhaustive == "1" || exhaustive == g.name {
				exhaust(t, g)
				return
			}
			bad := 0
			for hi := uint32(0); hi < 1<<16 && bad < 10; hi++ {
				for _, lo := range lows {
					if !g.check(t, hi<<16|lo) {
						bad++
					}
				}
			}
		})
	}
}

func exhaust(t *testing.T, g grid) {
	var wg sync.WaitGroup
	n := uint32(runtime.GOMAXPROCS(0))
	for w := range n {
		wg.Go(func() {
			for hi := w; hi < 1<<16; hi += n {
				for lo := uint32(0); lo < 1<<16; lo++ {
					if !g.check(t, hi<<16|lo) {
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// TestF16MatchesFloat16 compares F16FromF32 with github.com/x448/float16
// (NaN as torch gives it) on every 1009th float32 bit pattern and, for every
// 13-bit-aligned pattern, the rounding neighbourhood (ties, one below, one
// above). With DRAMA_EXHAUSTIVE=1 or f16 it compares all 2^32 inputs.
func TestF16MatchesFloat16(t *testing.T) {
	check := func(u uint32) bool {
		want := float16.Fromfloat32(math.Float32frombits(u)).Bits()
		if u&0x7FFFFFFF > 0x7F800000 {
			want = uint16(u>>16)&0x8000 | 0x7E00 | uint16(u&0x7FFFFF>>13)
		}
		if got := F16FromF32(math.Float32frombits(u)); got != want {
			t.Errorf("bits %#08x: want %#04x, got %#04x", u, want, got)
			return false
		}
		return true
	}
	step := uint64(1009)
	if e := os.Getenv("DRAMA_EXHAUSTIVE"); e == "1" || e == "f16" {
		step = 1
	}
	for u := uint64(0); u < 1<<32; u += step {
		if !check(uint32(u)) {
			return
		}
	}
	for hi := uint32(0); hi < 1<<19; hi++ {
		for _, lo := range []uint32{0, 1, 0xfff, 0x1000, 0x1001, 0x1fff} {
			if !check(hi<<13 | lo) {
				return
			}
		}
	}
}

func TestSpecialValues(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	tests := []struct {
		name      string
		got, want uint32
	}{
		{"bf16 NaN", uint32(BF16FromF32(nan)), 0xFFFF},
		{"bf16 -NaN", uint32(BF16FromF32(-nan)), 0xFFFF},
		{"bf16 +Inf", uint32(BF16FromF32(inf)), 0x7F80},
		{"bf16 -Inf", uint32(BF16FromF32(-inf)), 0xFF80},
		{"bf16 max rounds up to Inf", uint32(BF16FromF32(math.MaxFloat32)), 0x7F80},
		{"bf16 1.0", uint32(BF16FromF32(1)), 0x3F80},
		{"bf16 tie to even down", uint32(BF16FromF32(math.Float32frombits(0x3F808000))), 0x3F80},
		{"bf16 tie to even up", uint32(BF16FromF32(math.Float32frombits(0x3F818000))), 0x3F82},
		{"f16 NaN", uint32(F16FromF32(math.Float32frombits(0x7FC00000))), 0x7E00},
		{"f16 -NaN", uint32(F16FromF32(math.Float32frombits(0xFF800001))), 0xFE00},
		{"f16 NaN payload", uint32(F16FromF32(math.Float32frombits(0x7F810000))), 0x7E08},
		{"f16 65520 to Inf", uint32(F16FromF32(65520)), 0x7C00},
		{"f16 65519 to max", uint32(F16FromF32(65519)), 0x7BFF},
		{"e4m3 NaN", uint32(E4M3FromF32(nan)), 0x7F},
		{"e4m3 +Inf is NaN", uint32(E4M3FromF32(inf)), 0x7F},
		{"e4m3 -Inf is -NaN", uint32(E4M3FromF32(-inf)), 0xFF},
		{"e4m3 448", uint32(E4M3FromF32(448)), 0x7E},
		{"e4m3 464 tie to even", uint32(E4M3FromF32(464)), 0x7E},
		{"e4m3 above 464 is NaN", uint32(E4M3FromF32(math.Nextafter32(464, 500))), 0x7F},
		{"e4m3 1.0", uint32(E4M3FromF32(1)), 0x38},
		{"e4m3 0.125", uint32(E4M3FromF32(0.125)), 0x20},
		{"e4m3 88", uint32(E4M3FromF32(88)), 0x6B},
		{"e4m3 89.6875", uint32(E4M3FromF32(89.6875)), 0x6B},
		{"e4m3 20", uint32(E4M3FromF32(20)), 0x5A},
		{"e4m3 2^-9", uint32(E4M3FromF32(1.0 / 512)), 0x01},
		{"e4m3 2^-10 tie to zero", uint32(E4M3FromF32(1.0 / 1024)), 0x00},
		{"e4m3 -0", uint32(E4M3FromF32(negZero)), 0x80},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: want 0x%X, got 0x%X", tt.name, tt.want, tt.got)
		}
	}
}

func TestDecodeGoldens(t *testing.T) {
	if got := E4M3ToF32(0x5A) * float32(math.Ldexp(1, -10)); got != 0.01953125 {
		t.Errorf("0x5A * 2^-10: want 0.01953125, got %g", got)
	}
	if got := BF16FromF32(E4M3ToF32(0x5A) * float32(math.Ldexp(1, -10))); got != 0x3CA0 {
		t.Errorf("bf16(0x5A * 2^-10): want 0x3CA0, got 0x%04X", got)
	}
	for _, b := range []uint8{0x7F, 0xFF} {
		if v := E4M3ToF32(b); v == v {
			t.Errorf("E4M3ToF32(0x%02X): want NaN, got %g", b, v)
		}
	}
	if v := E4M3ToF32(0x80); v != 0 || !math.Signbit(float64(v)) {
		t.Errorf("E4M3ToF32(0x80): want -0, got %g", v)
	}
	// Every finite code survives a round trip.
	for b := range 256 {
		if b&0x7F == 0x7F {
			continue
		}
		if got := E4M3FromF32(E4M3ToF32(uint8(b))); got != uint8(b) {
			t.Errorf("e4m3 round trip 0x%02X: got 0x%02X", b, got)
		}
	}
}

func TestE2M1Rounding(t *testing.T) {
	next := func(f float32) float32 { return math.Nextafter32(f, 100) }
	prev := func(f float32) float32 { return math.Nextafter32(f, -100) }
	tests := []struct {
		in   float32
		want uint8
	}{
		{0, 0}, {negZero, 0}, {0.25, 0}, {next(0.25), 1}, {prev(0.75), 1}, {0.75, 2},
		{1, 2}, {1.25, 2}, {next(1.25), 3}, {prev(1.75), 3}, {1.75, 4}, {2.5, 4},
		{next(2.5), 5}, {prev(3.5), 5}, {3.5, 6}, {5, 6}, {next(5), 7}, {6, 7}, {100, 7},
		{-0.1, 8}, {-0.25, 8}, {-0.75, 0xA}, {-5, 0xE}, {-6.5, 0xF},
		{float32(math.NaN()), 7}, {float32(math.Inf(1)), 7}, {float32(math.Inf(-1)), 0xF},
	}
	for _, tt := range tests {
		if got := E2M1FromF32(tt.in); got != tt.want {
			t.Errorf("E2M1FromF32(%v): want 0x%X, got 0x%X", tt.in, tt.want, got)
		}
	}
	// Against the nearest-even oracle on a fine sweep of [0, 8].
	vals := []float64{0, 0.5, 1, 1.5, 2, 3, 4, 6}
	for i := range 8 * 4096 {
		x := float32(i) / 4096
		want := nearestEven(vals, float64(x))
		if got := E2M1FromF32(x); got != want {
			t.Fatalf("E2M1FromF32(%v): want %d, got %d", x, want, got)
		}
		if got := E2M1FromF32(-x); x != 0 && got != want|8 {
			t.Fatalf("E2M1FromF32(%v): want %d, got %d", -x, want|8, got)
		}
	}
}

func nearestEven(vals []float64, x float64) uint8 {
	best := 0
	for i, v := range vals {
		d, bd := math.Abs(v-x), math.Abs(vals[best]-x)
		if d < bd || (d == bd && i%2 == 0) {
			best = i
		}
	}
	return uint8(best)
}

func TestPackE2M1(t *testing.T) {
	codes := []uint8{7, 0xD, 2, 4, 0xE, 0, 8, 7}
	got := make([]byte, 4)
	PackE2M1(got, codes)
	want := []byte{0xD7, 0x42, 0x0E, 0x78}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("PackE2M1: want % X, got % X", want, got)
		}
	}
	back := make([]uint8, 8)
	for i, b := range got { // the inverse of PackE2M1: two codes a byte, low nibble first
		back[2*i], back[2*i+1] = b&15, b>>4
	}
	for i := range codes {
		if back[i] != codes[i] {
			t.Fatalf("unpacked: want %v, got %v", codes, back)
		}
	}
	for c := range uint8(16) {
		if E2M1FromF32(E2M1ToF32(c)) != c && c != 8 {
			t.Errorf("E2M1 round trip of code %d", c)
		}
	}
}

func TestSliceHelpers(t *testing.T) {
	src := []float32{1, -2.5, 0.1, 65504}
	buf := make([]byte, 8)
	out := make([]float32, 4)
	EncodeBF16(buf, src)
	DecodeBF16(out, buf)
	for i := range src {
		if out[i] != RoundBF16(src[i]) {
			t.Errorf("bf16 slice %d: want %g, got %g", i, RoundBF16(src[i]), out[i])
		}
	}
	EncodeF16(buf, src)
	DecodeF16(out, buf)
	for i := range src {
		if want := F16ToF32(F16FromF32(src[i])); out[i] != want {
			t.Errorf("f16 slice %d: want %g, got %g", i, want, out[i])
		}
	}
	EncodeBF16(nil, nil)
	DecodeF16(nil, nil)
}
