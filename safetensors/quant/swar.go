package quant

import "encoding/binary"

// Byte-lane arithmetic on uint64 words: eight 7-bit magnitudes at a time.

const (
	lanes7 = 0x7F7F7F7F7F7F7F7F
	lanesH = 0x8080808080808080
)

// maxLanes returns the per-byte maximum of a and b, whose bytes are all at
// most 127: (a|0x80) - b sets a byte's top bit exactly when a >= b, and no
// byte borrows from its neighbour.
func maxLanes(a, b uint64) uint64 {
	m := ((((a | lanesH) - b) & lanesH) >> 7) * 0xFF
	return a&m | b&^m
}

// reduceLanes returns the largest byte of x (bytes at most 127).
func reduceLanes(x uint64) uint8 {
	x = maxLanes(x, x>>32)
	x = maxLanes(x, x>>16)
	x = maxLanes(x, x>>8)
	return uint8(x)
}

// maxMagnitude returns the largest b & 0x7F over p.
func maxMagnitude(p []byte) uint8 {
	var acc uint64
	i := 0
	for ; i+8 <= len(p); i += 8 {
		acc = maxLanes(acc, binary.LittleEndian.Uint64(p[i:])&lanes7)
	}
	m := reduceLanes(acc)
	for ; i < len(p); i++ {
		m = max(m, p[i]&0x7F)
	}
	return m
}
