package prompt

// byteRunes maps each byte to the printable rune that stands for it in a
// byte-level BPE vocabulary (the GPT-2 table): printable Latin-1 bytes map to
// themselves, the other 68 bytes to U+0100 and up, in byte order.
var byteRunes = func() (t [256]rune) {
	next := rune(256)
	for b := range 256 {
		switch {
		case b >= '!' && b <= '~', b >= 0xA1 && b <= 0xAC, b >= 0xAE:
			t[b] = rune(b)
		default:
			t[b] = next
			next++
		}
	}
	return t
}()

// runeBytes is the inverse of byteRunes; -1 marks runes that stand for no byte.
var runeBytes = func() map[rune]byte {
	m := make(map[rune]byte, 256)
	for b, r := range byteRunes {
		m[r] = byte(b)
	}
	return m
}()

// byteLevel returns s with every byte replaced by its byte-level rune.
func byteLevel(s string) string {
	out := make([]rune, len(s))
	for i := range len(s) {
		out[i] = byteRunes[s[i]]
	}
	return string(out)
}

// unByteLevel turns a byte-level token back into the bytes it stands for. ok
// is false when the token holds a rune outside the table.
func unByteLevel(tok string) (b []byte, ok bool) {
	b = make([]byte, 0, len(tok))
	for _, r := range tok {
		c, found := runeBytes[r]
		if !found {
			return nil, false
		}
		b = append(b, c)
	}
	return b, true
}
