package safetext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"config.json", "config.json"},
		{"", ""},
		{"voix-élodie/données 日本語 ünï.txt", "voix-élodie/données 日本語 ünï.txt"},
		{`C:\path with\backslash`, `C:\path with\backslash`},
		{"esc\x1b]0;PWNED\x07\x1b[31mred.txt", `esc\x1b]0;PWNED\x07\x1b[31mred.txt`},
		{"a\nINJECTED: drama verified OK.txt", `a\nINJECTED: drama verified OK.txt`},
		{"tab\there\r", `tab\there\r`},
		{"nul\x00del\x7f", `nul\x00del\x7f`},
		{"c1\u009b31m\u0085", `c1\u009b31m\u0085`},
		{"bidi\u202egnp.exe\u2066x\u2069", `bidi\u202egnp.exe\u2066x\u2069`},
		{"line\u2028sep", `line\u2028sep`},
		{"bad\xffutf8\xc3", `bad\xffutf8\xc3`},
		{"replacement \uFFFD stays", "replacement \uFFFD stays"},
	} {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestLinesKeepsLineBreaks(t *testing.T) {
	in := "hub: 404 \x1b[2J\nadvice: check the \u202erepo\nlast\tline"
	want := "hub: 404 \\x1b[2J\nadvice: check the \\u202erepo\nlast\\tline"
	if got := Lines(in); got != want {
		t.Fatalf("Lines = %q, want %q", got, want)
	}
	if got := Lines("plain\ntext"); got != "plain\ntext" {
		t.Fatalf("Lines changed plain text: %q", got)
	}
}

func TestIsControl(t *testing.T) {
	for _, r := range []rune{0, '\t', '\n', 0x1b, 0x1f, 0x7f, 0x80, 0x9b, 0x9f} {
		if !IsControl(r) {
			t.Errorf("IsControl(%U) = false", r)
		}
	}
	for _, r := range []rune{' ', '~', 0xa0, 'é', 0x202e, '日'} {
		if IsControl(r) {
			t.Errorf("IsControl(%U) = true", r)
		}
	}
}

// FuzzEscape holds Escape's two promises over any input: what it returns
// holds no character it escapes and is valid UTF-8, and text that held
// none comes back unchanged.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "plain", "esc\x1b[31m", "nl\nx", "c1\u0085", "\u202e", "\xff\xfe", "é日本", `\x1b`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Escape(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Escape(%q) = %q: not UTF-8", s, out)
		}
		if strings.ContainsFunc(out, Escapes) {
			t.Fatalf("Escape(%q) = %q: still holds a character it escapes", s, out)
		}
		if utf8.ValidString(s) && !strings.ContainsFunc(s, Escapes) && out != s {
			t.Fatalf("Escape(%q) = %q: printable text changed", s, out)
		}
		if lines := Lines(s); strings.ContainsFunc(strings.ReplaceAll(lines, "\n", ""), Escapes) {
			t.Fatalf("Lines(%q) = %q: holds a character it escapes besides line feeds", s, lines)
		}
	})
}
