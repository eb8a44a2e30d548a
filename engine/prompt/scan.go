package prompt

import (
	"unicode"
	"unicode/utf8"
)

// qwenPattern is the split pattern of the Qwen2 and Qwen3 tokenizers, which
// Fish Audio's checkpoints keep.
const qwenPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// Character classes of the split pattern.
const (
	clOther   = iota // not a letter, number or space
	clLetter         // \p{L}
	clNumber         // \p{N}
	clSpace          // \s other than CR and LF
	clNewline        // \r or \n
)

var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for c := range utf8.RuneSelf {
		switch r := rune(c); {
		case r == '\r' || r == '\n':
			t[c] = clNewline
		case unicode.IsSpace(r):
			t[c] = clSpace
		case unicode.IsLetter(r):
			t[c] = clLetter
		case unicode.IsNumber(r):
			t[c] = clNumber
		}
	}
	return t
}()

// classAt returns the class of the rune at s[i] and its length; past the end
// it returns clNewline, which no rule continues with, and 0.
func classAt(s string, i int) (uint8, int) {
	if i >= len(s) {
		return clNewline, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	switch {
	case unicode.IsLetter(r):
		return clLetter, n
	case unicode.IsNumber(r):
		return clNumber, n
	case unicode.IsSpace(r):
		return clSpace, n
	}
	return clOther, n
}

// qwenSpans appends the pieces of s under qwenPattern, as regexp2 would
// find them, without running a regular expression: a hand-written scanner
// for the one pattern drama's checkpoints use, many times faster than the
// backtracking engine. FuzzQwenScanner holds it equal to regexp2 on the
// pattern.
func qwenSpans(s string, dst [][2]int) [][2]int {
	for i := 0; i < len(s); {
		j := qwenNext(s, i)
		dst = append(dst, [2]int{i, j})
		i = j
	}
	return dst
}

// qwenNext returns the end of the piece that starts at i, trying the
// pattern's alternatives in order.
func qwenNext(s string, i int) int {
	if s[i] == '\'' {
		if j := contraction(s, i); j > 0 {
			return j
		}
	}
	c, n := classAt(s, i)
	switch c {
	case clLetter:
		return run(s, i+n, clLetter)
	case clNumber:
		return i + n
	case clOther, clSpace:
		next, _ := classAt(s, i+n)
		if next == clLetter { // [^\r\n\p{L}\p{N}]?\p{L}+
			return run(s, i+n, clLetter)
		}
		if c == clOther {
			return run(s, run(s, i+n, clOther), clNewline)
		}
		if s[i] == ' ' && next == clOther { //  ?[^\s\p{L}\p{N}]+[\r\n]*
			return run(s, run(s, i+1, clOther), clNewline)
		}
	}
	return spaces(s, i)
}

// spaces handles a run of whitespace at i with the last three alternatives:
// up to its last line break, else all of it but its last character when a
// non-space follows, else all of it.
func spaces(s string, i int) int {
	end, lastNL, lastStart := i, -1, i
	for end < len(s) {
		c, n := classAt(s, end)
		if c != clSpace && c != clNewline {
			break
		}
		if c == clNewline {
			lastNL = end
		}
		lastStart = end
		end += n
	}
	switch {
	case lastNL >= 0: // \s*[\r\n]+
		return lastNL + 1
	case end == len(s) || lastStart == i: // \s+(?!\S) at the end, or \s+
		return end
	}
	return lastStart // \s+(?!\S)
}

// run returns where the run of class c that starts at i ends. clNewline
// runs over CR and LF only.
func run(s string, i int, c uint8) int {
	for i < len(s) {
		got, n := classAt(s, i)
		if got != c {
			break
		}
		i += n
	}
	return i
}

// contraction returns the end of (?i:'s|'t|'re|'ve|'m|'ll|'d) at i, or 0.
func contraction(s string, i int) int {
	lower := func(k int) byte {
		if k >= len(s) {
			return 0
		}
		return s[k] | 0x20
	}
	switch a := lower(i + 1); a {
	case 's', 't', 'm', 'd':
		if a == s[i+1]|0x20 && isASCIILetter(s[i+1]) {
			return i + 2
		}
	case 'r', 'v':
		if isASCIILetter(s[i+1]) && lower(i+2) == 'e' && isASCIILetter(s[i+2]) {
			return i + 3
		}
	case 'l':
		if isASCIILetter(s[i+1]) && lower(i+2) == 'l' && isASCIILetter(s[i+2]) {
			return i + 3
		}
	}
	return 0
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
