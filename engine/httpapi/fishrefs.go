package httpapi

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/httpapi/apikey"
)

// The headers that carry a clone's consent on Fish Audio's routes, whose
// bodies have no place for it (POST /model takes them as form fields too).
const (
	HeaderConsentWho       = "X-Drama-Consent-Who"
	HeaderConsentStatement = "X-Drama-Consent-Statement"
	HeaderVoiceSource      = "X-Drama-Voice-Source"
)

// ReferenceMaker is a VoiceStore that also makes references of
// recordings without keeping a voice: the inline references of POST
// /v1/tts, through the same clip checks and encoder as a clone.
type ReferenceMaker interface {
	// MakeReferences prepares and encodes req's clips, each into one
	// reference, checking req's consent as Clone does; nothing is saved.
	MakeReferences(ctx context.Context, req CloneRequest) ([]engine.Reference, error)
}

// Bounds of the cache of inline references.
const (
	maxCachedRefs     = 64
	maxCachedRefBytes = 64 << 20
)

// refCache keeps the references made of inline recordings, by the sha256
// of the recording and its words, so that a client that sends the same
// reference with every request has it encoded once. It is bounded in
// count and in bytes and drops the least recently used first.
type refCache struct {
	mu       sync.Mutex
	maxItems int
	maxBytes int64
	bytes    int64
	order    *list.List // front: most recently used
	items    map[[32]byte]*list.Element
}

type refEntry struct {
	key  [32]byte
	ref  engine.Reference
	size int64
}

func newRefCache(items int, bytes int64) *refCache {
	return &refCache{maxItems: items, maxBytes: bytes, order: list.New(), items: map[[32]byte]*list.Element{}}
}

// refKey names a recording and its words.
func refKey(audio []byte, text string) [32]byte {
	h := sha256.New()
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(text)))
	h.Write(n[:])
	h.Write([]byte(text))
	h.Write(audio)
	var k [32]byte
	h.Sum(k[:0])
	return k
}

func (c *refCache) get(k [32]byte) (engine.Reference, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		return engine.Reference{}, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*refEntry).ref, true
}

func (c *refCache) put(k [32]byte, ref engine.Reference) {
	size := int64(len(ref.Text)) + 64
	for _, row := range ref.Codes {
		size += int64(len(row)) * 8
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[k]; ok || size > c.maxBytes {
		return
	}
	c.items[k] = c.order.PushFront(&refEntry{key: k, ref: ref, size: size})
	c.bytes += size
	for c.order.Len() > c.maxItems || c.bytes > c.maxBytes {
		old := c.order.Back().Value.(*refEntry)
		c.order.Remove(c.order.Back())
		delete(c.items, old.key)
		c.bytes -= old.size
	}
}

func (c *refCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// consentOf reads a clone's consent from the request's headers, or from
// fields (a form's) under the same names or POST /v1/voices' own.
func consentOf(r *http.Request, fields map[string]string) (source, who, statement string) {
	pick := func(header string, names ...string) string {
		if v := strings.TrimSpace(r.Header.Get(header)); v != "" {
			return v
		}
		for _, n := range append([]string{header}, names...) {
			if v := strings.TrimSpace(fields[n]); v != "" {
				return v
			}
		}
		return ""
	}
	return pick(HeaderVoiceSource, "source"), pick(HeaderConsentWho, "consent_who"), pick(HeaderConsentStatement, "consent_statement")
}

// consentAdvice says how to give consent on Fish Audio's routes.
func consentAdvice(what string) string {
	return fmt.Sprintf("%s clones a voice, and a cloned voice needs consent: send the headers %s (who gave it) and %s (their words), or %s: synthetic for a voice that is no person's",
		what, HeaderConsentWho, HeaderConsentStatement, HeaderVoiceSource)
}

// fishReferences makes the request's inline references: those cached
// are taken as they are, the others cloned through the voice store (one
// clone at a time, as POST /v1/voices) and cached. Each needs what a
// clone needs, cached or not: the request's consent and, on a server with
// API keys, a key of scope voices.
func (s *Server) fishReferences(r *http.Request, in []fishReference) ([]engine.Reference, *apiError) {
	if key, keyed := requestKey(r.Context()); keyed && !key.Scope.Allows(apikey.Voices) {
		e := scopeError(key, apikey.Voices, "a speech request with references (they clone a voice)")
		e.Param = "references"
		return nil, e
	}
	if !s.capabilities().References {
		return nil, fishRefused("references", "this engine does not take references in a request: clone the voice (POST /model) and name it in reference_id")
	}
	maker, ok := s.cfg.Voices.(ReferenceMaker)
	if !ok {
		return nil, &apiError{Status: http.StatusNotImplemented, Type: "invalid_request_error", Param: "references", Code: "cloning_unavailable",
			Message: "inline references need cloning, which is not available on this server: name a voice of GET /model in reference_id"}
	}
	lim := s.cfg.Uploads
	if len(in) > lim.MaxClips {
		return nil, fishRefused("references", "%d references: at most %d (drama serve's clip limit)", len(in), lim.MaxClips)
	}
	source, who, statement := consentOf(r, nil)
	if source == "" {
		source = "consented"
	}
	if source != "synthetic" && (who == "" || statement == "") {
		return nil, fishRefused("references", "%s", consentAdvice("an inline reference"))
	}
	out := make([]engine.Reference, len(in))
	var missing []int
	for i, ref := range in {
		switch {
		case len(ref.Audio) == 0:
			return nil, fishRefused("references", "references[%d].audio is empty: send the recording's bytes", i)
		case int64(len(ref.Audio)) > lim.MaxClipBytes:
			return nil, fishRefused("references", "references[%d].audio is %d bytes, over drama serve's clip limit of %d (--max-clip-bytes)", i, len(ref.Audio), lim.MaxClipBytes)
		case strings.TrimSpace(ref.Text) == "":
			return nil, fishRefused("references", "references[%d].text is empty: send the exact words spoken in the recording", i)
		}
		if e := checkControls("references", ref.Text); e != nil {
			return nil, (&speech{fields: fishFields}).refusal(e)
		}
		if got, ok := s.refs.get(refKey(ref.Audio, ref.Text)); ok {
			out[i] = got
			continue
		}
		missing = append(missing, i)
	}
	if len(missing) == 0 {
		return out, nil
	}
	release, e := s.cloneTurn(r.Context())
	if e != nil {
		return nil, e
	}
	defer release()
	req := CloneRequest{Name: "inline reference", Source: source, ConsentWho: who, ConsentStatement: statement}
	for _, i := range missing {
		req.Clips = append(req.Clips, CloneClip{Filename: fmt.Sprintf("references[%d]", i), Data: in[i].Audio, Transcript: in[i].Text})
	}
	made, err := maker.MakeReferences(r.Context(), req)
	if err != nil {
		e := cloneError(err)
		if e.Status == http.StatusBadRequest {
			e = fishRefused("references", "%s", e.Message)
		}
		return nil, e
	}
	if len(made) != len(missing) {
		return nil, &apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: "clone_failed",
			Message: fmt.Sprintf("the encoder made %d references of %d recordings", len(made), len(missing))}
	}
	for j, i := range missing {
		out[i] = made[j]
		s.refs.put(refKey(in[i].Audio, in[i].Text), made[j])
	}
	return out, nil
}
