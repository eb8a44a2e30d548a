package prompt

import (
	"fmt"
	"strings"
	"sync"

	"github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/model/bpe"
)

// Word cache limits, as Hugging Face's BPE model has them: words of up to
// maxCachedWord bytes are remembered, up to cacheCapacity of them.
const (
	maxCachedWord = 256
	cacheCapacity = 10000
)

// bpeModel is a byte-level BPE model. It keeps sugarme's BPE model (the
// vocabulary, the reverse vocabulary and the merge table read from
// tokenizer.json) and replaces its merge loop, which orders merges of equal
// rank by an unset field instead of by position.
//
// The merge loop here is the one Hugging Face's tokenizers run: it always
// applies the merge with the lowest rank and, among equal ranks, the
// leftmost. The byte-level mapping is folded in: a piece's bytes become the
// ids of their byte tokens directly.
type bpeModel struct {
	*bpe.BPE
	byteIDs [256]int
	// ignoreMerges takes a piece that is a whole vocabulary entry as it is,
	// as the file's model.ignore_merges asks.
	ignoreMerges bool

	mu    sync.RWMutex
	cache map[string][]int
}

var _ tokenizer.Model = (*bpeModel)(nil)

// newBPEModel wraps m. Every byte must have its byte-level token in the
// vocabulary.
func newBPEModel(m *bpe.BPE) (*bpeModel, error) {
	b := &bpeModel{BPE: m, cache: make(map[string][]int)}
	for c, r := range byteRunes {
		id, ok := (*m.Vocab)[string(r)]
		if !ok {
			return nil, fmt.Errorf("model.vocab: no token for byte 0x%02x (%q): not a byte-level BPE vocabulary", c, string(r))
		}
		b.byteIDs[c] = id
	}
	return b, nil
}

// Tokenize splits one pre-tokenized piece into tokens whose offsets are byte
// offsets in piece. It implements sugarme's tokenizer.Model.
func (b *bpeModel) Tokenize(piece string) ([]tokenizer.Token, error) {
	ids := b.appendIDs(nil, piece)
	toks := make([]tokenizer.Token, len(ids))
	off := 0
	for i, id := range ids {
		v := (*b.VocabR)[id]
		n := byteLen(v)
		toks[i] = tokenizer.Token{Id: id, Value: v, Offsets: []int{off, off + n}}
		off += n
	}
	return toks, nil
}

// byteLen returns how many input bytes a byte-level token stands for.
func byteLen(tok string) int {
	n := 0
	for range tok {
		n++
	}
	return n
}

// appendIDs appends the ids of piece to dst.
func (b *bpeModel) appendIDs(dst []int, piece string) []int {
	if len(piece) == 0 {
		return dst
	}
	if len(piece) == 1 {
		return append(dst, b.byteIDs[piece[0]])
	}
	if b.ignoreMerges {
		if id, ok := (*b.Vocab)[byteLevel(piece)]; ok {
			return append(dst, id)
		}
	}
	if len(piece) <= maxCachedWord {
		b.mu.RLock()
		ids, ok := b.cache[piece]
		b.mu.RUnlock()
		if ok {
			return append(dst, ids...)
		}
	}
	start := len(dst)
	dst = b.merge(dst, piece)
	if len(piece) <= maxCachedWord {
		b.remember(piece, dst[start:])
	}
	return dst
}

func (b *bpeModel) remember(piece string, ids []int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.cache) < cacheCapacity {
		// Clone the key: piece is part of the caller's text, which the cache
		// must not keep alive.
		b.cache[strings.Clone(piece)] = append([]int(nil), ids...)
	}
}

// symbol is one token of a word being merged, in a doubly linked list.
type symbol struct {
	id         int
	prev, next int
	gone       bool
}

// candidate is a merge that may apply at pos: the pair starting there.
type candidate struct {
	rank, pos, id int
}

// scratch holds a merge's working memory, reused through scratchPool.
type scratch struct {
	syms []symbol
	q    mergeQueue
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// merge runs the BPE merge loop over piece and appends the resulting ids.
func (b *bpeModel) merge(dst []int, piece string) []int {
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	syms := sc.syms[:0]
	for i := range len(piece) {
		syms = append(syms, symbol{id: b.byteIDs[piece[i]], prev: i - 1, next: i + 1})
	}
	syms[len(syms)-1].next = -1
	sc.syms = syms
	q := &sc.q
	*q = (*q)[:0]
	for i := 0; i+1 < len(syms); i++ {
		b.push(q, syms[i].id, syms[i+1].id, i)
	}
	for len(*q) > 0 {
		c := q.pop()
		s := &syms[c.pos]
		if s.gone || s.next < 0 {
			continue
		}
		right := &syms[s.next]
		if pv, ok := (*b.Merges)[bpe.Pair{C1: s.id, C2: right.id}]; !ok || pv.Rank != c.rank || pv.NewId != c.id {
			continue // stale: one side has merged since
		}
		s.id, s.next = c.id, right.next
		right.gone = true
		if s.next >= 0 {
			syms[s.next].prev = c.pos
			b.push(q, s.id, syms[s.next].id, c.pos)
		}
		if s.prev >= 0 {
			b.push(q, syms[s.prev].id, s.id, s.prev)
		}
	}
	for i := 0; i >= 0; i = syms[i].next {
		dst = append(dst, syms[i].id)
	}
	return dst
}

// push queues the merge of (left, right) at pos if there is one.
func (b *bpeModel) push(q *mergeQueue, left, right, pos int) {
	if pv, ok := (*b.Merges)[bpe.Pair{C1: left, C2: right}]; ok {
		q.push(candidate{rank: pv.Rank, pos: pos, id: pv.NewId})
	}
}

// mergeQueue is a binary min-heap of candidates ordered by rank, then
// position.
type mergeQueue []candidate

func (c candidate) less(d candidate) bool {
	return c.rank < d.rank || c.rank == d.rank && c.pos < d.pos
}

func (q *mergeQueue) push(c candidate) {
	h := append(*q, c)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	*q = h
}

func (q *mergeQueue) pop() candidate {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].less(h[m]) {
			m = l
		}
		if r < len(h) && h[r].less(h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}
