package transcribe

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Words returns the words of s as word error rate counts them, the same
// for the text sent to the model and the transcript that came back:
//
//   - Unicode NFKC, then lower case ("Ｈｅｌｌｏ" and "HELLO" are "hello");
//   - a point tag in square brackets ("[laughs]", "[whispering, nervous]")
//     is removed with its brackets: the model performs it, it does not say it;
//   - a separator between two digits is kept ("3.5", "1,000" is "1000", "2:30")
//     and numbers are left as they are written: "21" and "twenty-one" are
//     different words, as the transcriber chooses to write numbers;
//   - an apostrophe inside a word is dropped ("don't" is "dont"), any other
//     punctuation or symbol separates words ("well-known" is "well known").
func Words(s string) []string {
	s = strings.ToLower(norm.NFKC.String(s))
	var b strings.Builder
	rs := []rune(s)
	depth := 0
	for i, r := range rs {
		switch {
		case r == '[':
			depth++
			b.WriteRune(' ')
			continue
		case r == ']' && depth > 0:
			depth--
			b.WriteRune(' ')
			continue
		case depth > 0:
			continue
		}
		prev, next := rune(0), rune(0)
		if i > 0 {
			prev = rs[i-1]
		}
		if i+1 < len(rs) {
			next = rs[i+1]
		}
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		case (r == '.' || r == ':') && unicode.IsDigit(prev) && unicode.IsDigit(next):
			b.WriteRune(r)
		case r == ',' && unicode.IsDigit(prev) && unicode.IsDigit(next):
			// a thousands separator: 1,000 is 1000
		case (r == '\'' || r == '\u2019') && unicode.IsLetter(prev) && unicode.IsLetter(next):
			// an apostrophe inside a word: don't is dont
		default:
			b.WriteRune(' ')
		}
	}
	return strings.Fields(b.String())
}

// Score is the word error rate of one transcript against its reference.
type Score struct {
	// Words is the number of words of the reference; Errors the
	// substitutions, deletions and insertions that turn it into the
	// transcript, fewest first.
	Words  int `json:"words"`
	Errors int `json:"errors"`
}

// Rate is Errors over Words: 0 for a perfect transcript, and above 1 when
// the transcript adds more words than the reference has. A reference of no
// words rates 0 against an empty transcript and 1 against any other.
func (s Score) Rate() float64 {
	if s.Words == 0 {
		if s.Errors == 0 {
			return 0
		}
		return 1
	}
	return float64(s.Errors) / float64(s.Words)
}

// Add sums two scores: the rate of a set of texts is its errors over its
// words, not the mean of their rates.
func (s Score) Add(o Score) Score {
	return Score{Words: s.Words + o.Words, Errors: s.Errors + o.Errors}
}

// WER scores transcript against reference, both normalised by Words: the
// word-level edit distance (each substitution, deletion and insertion
// counting one) over the reference's words.
func WER(reference, transcript string) Score {
	ref, hyp := Words(reference), Words(transcript)
	// one row of the edit distance table at a time
	prev := make([]int, len(hyp)+1)
	cur := make([]int, len(hyp)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ref); i++ {
		cur[0] = i
		for j := 1; j <= len(hyp); j++ {
			sub := prev[j-1]
			if ref[i-1] != hyp[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return Score{Words: len(ref), Errors: prev[len(hyp)]}
}
