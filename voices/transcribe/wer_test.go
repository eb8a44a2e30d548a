package transcribe

import (
	"slices"
	"strings"
	"testing"
)

func TestWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
	}{
		{"Hello, World!", "hello world"},
		{"[laughs] I can't believe it. [whispering, nervous] Really?", "i cant believe it really"},
		{"It’s 3.5 km, or 1,000 steps, at 2:30.", "its 3.5 km or 1000 steps at 2:30"},
		{"A well-known fact — twenty-one.", "a well known fact twenty one"},
		{"ＨＥＬＬＯ", "hello"},
		{"21 apples", "21 apples"},
		{"[unclosed tag and words", ""},
		{"stray ] bracket", "stray bracket"},
		{"Ünïcode café", "ünïcode café"},
		{"...", ""},
	} {
		if got := strings.Join(Words(c.in), " "); got != c.want {
			t.Errorf("Words(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestWER(t *testing.T) {
	for _, c := range []struct {
		ref, hyp      string
		words, errors int
	}{
		{"Hello there. [laughs] It works.", "hello there, it works", 4, 0},
		{"the cat sat on the mat", "the cat sat on mat", 6, 1},         // a deletion
		{"the cat sat on the mat", "the cat sat on the red mat", 6, 1}, // an insertion
		{"the cat sat on the mat", "the dog sat on the mat", 6, 1},     // a substitution
		{"the cat sat on the mat", "", 6, 6},                           // nothing heard
		{"one two", "noise noise noise noise noise", 2, 5},             // more errors than words
		{"", "", 0, 0},           // nothing said, nothing heard
		{"[laughs]", "ha", 0, 1}, // a tag alone: any word is an error
		{"I have 21 apples", "I have twenty-one apples", 4, 2},               // numbers as written
		{"a b c d e f g h i j", "a x c d e f g h i j k", 10, 2},              // one substitution and one insertion
		{"Don't stop.", "dont stop", 2, 0},                                   // apostrophes
		{"It costs 1,000 dollars", "it costs 1000 dollars", 4, 0},            // thousands
		{"The quick brown fox", "the quick brown fox jumps", 4, 1},           // a tail insertion
		{"alpha beta gamma delta", "beta gamma delta epsilon", 4, 2},         // shifted
		{"same same same", "same same same", 3, 0},                           // repeated words
		{"Ｗide", "wide", 1, 0},                                               // NFKC
		{"x", "y z", 1, 2},                                                   // substitution and insertion
		{"[whispering] I'm fine.", "I'm fine", 2, 0},                         // a tag at the start
		{"Wait... what?!", "wait what", 2, 0},                                // punctuation runs
		{"Zero point five", "0.5", 3, 3},                                     // as the transcriber writes it
		{"ab", "a b", 1, 2},                                                  // split words
		{"New York", "newyork", 2, 2},                                        // joined words
		{"end.", "end", 1, 0},                                                // final stop
		{"tab\tand\nnewline", "tab and newline", 3, 0},                       // whitespace
		{strings.Repeat("w ", 200), strings.Repeat("w ", 199) + "x", 200, 1}, // long texts
	} {
		got := WER(c.ref, c.hyp)
		if got.Words != c.words || got.Errors != c.errors {
			t.Errorf("WER(%q, %q) = %+v, want %d words %d errors", c.ref, c.hyp, got, c.words, c.errors)
		}
	}
}

func TestScoreRateAndAdd(t *testing.T) {
	a, b := Score{Words: 10, Errors: 1}, Score{Words: 90, Errors: 0}
	if r := a.Add(b).Rate(); r != 0.01 {
		t.Errorf("pooled rate %v, want 0.01 (errors over words, not the mean of 0.1 and 0)", r)
	}
	for _, c := range []struct {
		s    Score
		want float64
	}{{Score{}, 0}, {Score{Errors: 2}, 1}, {Score{Words: 2, Errors: 5}, 2.5}} {
		if r := c.s.Rate(); r != c.want {
			t.Errorf("%+v.Rate() = %v, want %v", c.s, r, c.want)
		}
	}
	if !slices.Equal(Words(""), nil) {
		t.Error("no words in an empty text")
	}
}
