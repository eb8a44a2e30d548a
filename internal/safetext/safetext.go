// Package safetext makes text that came from outside drama safe to print:
// a file name from a Hub, a mirror or a pins file, a Hub's error message,
// an engine's error or log line, a voice's name or transcript. Such text
// may carry terminal escapes (ESC [ ... sets colours, ESC ] 0; ... BEL
// sets the window title), a line break that forges a line of drama's own,
// or a bidi override that shows a name backwards. Escape writes each of
// these characters as a visible escape, so the terminal shows what the
// text holds and does nothing it says. It imports the standard library
// alone, and every package may import it.
package safetext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// IsControl reports whether r is a control character: C0 (U+0000 to
// U+001F, TAB and line feed included), DEL (U+007F) or C1 (U+0080 to
// U+009F). drama refuses a file name that holds one.
func IsControl(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f)
}

// isFormat reports whether r reorders or breaks the text around it: the
// bidi embeddings and overrides (U+202A to U+202E), the bidi isolates
// (U+2066 to U+2069), and the line and paragraph separators (U+2028,
// U+2029).
func isFormat(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x2028 || r == 0x2029
}

// Escapes reports whether Escape writes r as an escape.
func Escapes(r rune) bool { return IsControl(r) || isFormat(r) }

// Escape returns s with every character Escapes names written as a Go
// escape, shown literally: ESC as `\x1b`, a line feed as `\n`, a TAB as
// `\t`, a carriage return as `\r`, DEL as `\x7f`, a C1 or bidi character
// as `\u009b` or `\u202e`, and a byte that is not UTF-8 as `\xff`. All
// other text, non-ASCII letters and backslashes included, is unchanged.
// Use it once, where outside text is printed; JSON output needs it not.
func Escape(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80 && Escapes(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case Escapes(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Lines escapes each line of s with Escape and keeps the line feeds
// between them: for a message drama builds over several lines (advice
// under an error, an engine's last log lines) that holds outside text.
// A line feed inside outside text is a line break here too; text whose
// lines are its own (a file name) is escaped with Escape where it is put
// in the message.
func Lines(s string) string {
	if !needsEscape(s) {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Escape(l)
	}
	return strings.Join(lines, "\n")
}

// needsEscape reports whether s holds a character Escape rewrites.
func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if IsControl(rune(c)) {
				return true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || Escapes(r) {
			return true
		}
		i += n
	}
	return false
}
