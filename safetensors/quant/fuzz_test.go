package quant

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzKeepList feeds keep lists and router statistics through parsing,
// coverage and validation: every input gives a result or an error.
func FuzzKeepList(f *testing.F) {
	f.Add([]byte(`{"0":[0,2,5],"1":[1,7]}`), 0.9)
	f.Add([]byte(`{"metadata":{"drama_experts":{"3":[1]}},"weight_map":{}}`), 1.0)
	f.Add([]byte(`{"0":[1e308,2,0],"1":[0.5,0.5]}`), 0.5)
	have := map[int][]int{0: {0, 1, 2, 3, 4, 5, 6, 7}, 1: {0, 1, 2, 3, 4, 5, 6, 7}}
	f.Fuzz(func(t *testing.T, b []byte, coverage float64) {
		p := filepath.Join(t.TempDir(), "k.json")
		os.WriteFile(p, b, 0o644)
		if k, err := ReadKeepList(p); err == nil {
			_ = k.Validate(have)
			if _, err := json.Marshal(k); err != nil {
				t.Fatal(err)
			}
		}
		if st, err := ReadRouterStats(p); err == nil {
			if k, err := Coverage(st, coverage); err == nil {
				for l, ids := range k {
					if len(ids) == 0 || len(ids) > len(st[l]) {
						t.Fatalf("layer %d: kept %v of %d", l, ids, len(st[l]))
					}
				}
			}
		}
	})
}

// FuzzNVFP4Kernel checks the threshold kernel against the division path on
// arbitrary finite blocks.
func FuzzNVFP4Kernel(f *testing.F) {
	f.Add(make([]byte, 64), float32(0.5))
	f.Add([]byte{0x80, 0, 0, 0, 1, 0, 0, 0x80, 0xff, 0xff, 0x7f, 0x7f}, float32(1e-30))
	f.Fuzz(func(t *testing.T, raw []byte, amax float32) {
		x := make([]float32, 16)
		for i := range x {
			if 4*i+4 <= len(raw) {
				x[i] = float32frombytes(raw[4*i:])
			}
			if x[i] != x[i] || x[i] > 3e38 || x[i] < -3e38 {
				x[i] = 0
			}
		}
		a, _ := Amax(x)
		if !(amax > a) || amax > 3e38 {
			amax = a
		}
		g := GlobalScale(amax)
		q, _ := NewNVFP4(1, 16)
		QuantizeNVFP4(q, x, g)
		want := make([]byte, 8)
		quantizeByDivision(want, x, e4m3Div(q.Scales[0], g))
		if string(want) != string(q.Packed) {
			t.Fatalf("x %v global %v: kernel % X, division % X", x, g, q.Packed, want)
		}
	})
}
