package voices

import (
	"math/rand/v2"
	"testing"

	"golang.org/x/text/unicode/norm"
)

// isNFC must agree with the normalizer on every input.
func TestIsNFCAgreesWithNormalizer(t *testing.T) {
	interesting := []rune{'a', 'e', 'A', 0x300, 0x301, 0x327, 0x340, 0x374, 0x1100, 0x1161, 0x11a8, 0xac00, 0xac01,
		0x304b, 0x3099, 0x309a, 0x30ab, 0x4e00, 0x8a9e, 0xf900, 0x0b47, 0x0b3e, 0x0915, 0x093c, 0x212b, 0x2126, 0x1e0a,
		0x0f73, 0x0fb2, 0x0f80, 0x1d15e, 0x2f800, 0x1f600, 0x00c5, 0x05d0, 0x05b8, 0x0627, 0x0653}
	for _, a := range interesting {
		for _, b := range interesting {
			for _, c := range []rune{'x', 0x301, 0x4e00} {
				s := string([]rune{a, b, c})
				if got, want := isNFC(s), norm.NFC.IsNormalString(s); got != want {
					t.Errorf("isNFC(%+q) = %v, want %v", s, got, want)
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		rs := make([]rune, 1+rng.IntN(4))
		for i := range rs {
			rs[i] = rune(rng.IntN(0x10000))
			if rs[i] >= 0xd800 && rs[i] <= 0xdfff {
				rs[i] = 'z'
			}
		}
		s := string(rs)
		if got, want := isNFC(s), norm.NFC.IsNormalString(s); got != want {
			t.Fatalf("isNFC(%+q) = %v, want %v", s, got, want)
		}
	}
}
