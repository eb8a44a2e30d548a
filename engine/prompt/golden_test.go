package prompt

import (
	"slices"
	"sync"
	"testing"
)

// TestGolden requires the ids of Hugging Face's tokenizers (Rust, 0.23.2)
// for every corpus string, exactly.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		file string
		tok  func(testing.TB) *Tokenizer
	}{
		{"golden-qwen3.jsonl", qwen},
		{"golden-drama.jsonl", drama},
	} {
		t.Run(tc.file, func(t *testing.T) {
			tok := tc.tok(t)
			cases := readGolden(t, tc.file)
			if len(cases) < 3000 {
				t.Fatalf("corpus has %d strings, want at least 3000", len(cases))
			}
			bad := differences{t: t, show: 20}
			for i, c := range cases {
				got, err := tok.Encode(c.Text)
				if err != nil {
					t.Errorf("line %d %q: %v", i+1, c.Text, err)
					continue
				}
				bad.check(i, c, got)
			}
			bad.report(len(cases))
		})
	}
}

// TestGoldenTokens runs the golden corpus through EncodeTokens (sugarme's
// pipeline) and checks its ids and that its offsets stay inside the text and
// in order.
func TestGoldenTokens(t *testing.T) {
	tok := qwen(t)
	cases := readGolden(t, "golden-qwen3.jsonl")
	if testing.Short() {
		cases = cases[:500]
	}
	bad := differences{t: t, show: 10}
	for i, c := range cases {
		toks, err := tok.EncodeTokens(c.Text)
		if err != nil {
			t.Fatalf("line %d %q: %v", i+1, c.Text, err)
		}
		ids := make([]int, len(toks))
		last := 0
		for j, k := range toks {
			ids[j] = k.ID
			if k.Start < last || k.End < k.Start || k.End > len(c.Text) {
				t.Errorf("line %d %q: token %d %q has offsets [%d,%d) after %d", i+1, c.Text, j, k.Value, k.Start, k.End, last)
			}
			last = k.Start
		}
		bad.check(i, c, ids)
	}
	bad.report(len(cases))
}

// TestEncodeConcurrent encodes the golden corpus from several goroutines at
// once (the word cache and scratch memory are shared).
func TestEncodeConcurrent(t *testing.T) {
	tok := qwen(t)
	cases := readGolden(t, "golden-qwen3.jsonl")[:500]
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range cases {
				c := cases[(i*7+g*331)%len(cases)]
				got, err := tok.Encode(c.Text)
				if err != nil || !slices.Equal(got, c.IDs) {
					errs <- c.Text
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for s := range errs {
		t.Errorf("concurrent Encode(%q) differs", s)
	}
}

// differences counts the corpus strings whose ids are not the golden ones
// and shows the first few.
type differences struct {
	t          *testing.T
	show, seen int
}

// check compares the ids got for line i's case with its golden ids.
func (d *differences) check(i int, c goldenCase, got []int) {
	d.t.Helper()
	if slices.Equal(got, c.IDs) {
		return
	}
	if d.seen++; d.seen <= d.show {
		d.t.Errorf("line %d %q:\n got %v\nwant %v", i+1, c.Text, got, c.IDs)
	}
}

// report fails the test when any of n strings differed.
func (d *differences) report(n int) {
	if d.seen > 0 {
		d.t.Errorf("%d of %d strings differ", d.seen, n)
	}
}
