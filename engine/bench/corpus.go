package bench

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"
)

//go:embed corpus/drama-bench-24.txt
var defaultCorpus []byte

// DefaultCorpusName is the name of the built-in corpus.
const DefaultCorpusName = "drama-bench-24"

// DefaultCorpusSHA256 is the sha256 of the built-in corpus file, so a
// report says exactly which texts were spoken.
const DefaultCorpusSHA256 = "e6d68fb1d39e8ac40cd22d119a7f15fb07889c0b2fd91886dbde5c248b483923"

// Length classes of a text, by its length in characters.
const (
	Short  = "short"  // under 60 characters
	Medium = "medium" // 60 to 149
	Long   = "long"   // 150 or more
)

// LengthClass returns the length class of a text.
func LengthClass(text string) string {
	switch n := utf8.RuneCountInString(text); {
	case n < 60:
		return Short
	case n < 150:
		return Medium
	default:
		return Long
	}
}

// Text is one text of a corpus.
type Text struct {
	ID    string `json:"id"`    // t01, t02, ... in the order of the file
	Class string `json:"class"` // Short, Medium or Long
	Text  string `json:"text"`
}

// Corpus is the list of texts a run speaks.
type Corpus struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"` // of the file's bytes
	Texts  []Text `json:"texts"`
}

// DefaultCorpus returns the built-in corpus: 24 English texts, eight of
// each length class, with point tags.
func DefaultCorpus() *Corpus {
	c, err := ParseCorpus(DefaultCorpusName, defaultCorpus)
	if err != nil {
		panic(err) // the embedded file is checked by the package's tests
	}
	return c
}

// ReadCorpus reads a corpus file: UTF-8, one text a line; blank lines and
// lines starting with # are ignored.
func ReadCorpus(name string) (*Corpus, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("bench: corpus: %w", err)
	}
	return ParseCorpus(name, data)
}

// maxText is the longest text drama serve takes.
const maxText = 4096

// ParseCorpus parses a corpus file's bytes; name is used in errors and as
// the corpus's name.
func ParseCorpus(name string, data []byte) (*Corpus, error) {
	sum := sha256.Sum256(data)
	c := &Corpus{Name: name, SHA256: hex.EncodeToString(sum[:])}
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("bench: corpus %s: not UTF-8 text", name)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if n := utf8.RuneCountInString(t); n > maxText {
			return nil, fmt.Errorf("bench: corpus %s: line %d: %d characters; drama serve takes at most %d", name, line, n, maxText)
		}
		c.Texts = append(c.Texts, Text{ID: fmt.Sprintf("t%02d", len(c.Texts)+1), Class: LengthClass(t), Text: t})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bench: corpus %s: %w", name, err)
	}
	if len(c.Texts) == 0 {
		return nil, fmt.Errorf("bench: corpus %s: no texts (one a line; # starts a comment)", name)
	}
	return c, nil
}
