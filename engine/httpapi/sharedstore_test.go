package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
)

// sharedStore is one voice store several servers share, as hosts sharing
// drama serve --voice-store: a voice one host makes or deletes is there,
// or gone, for every other at once.
type sharedStore struct {
	mu     sync.Mutex
	voices map[string][]engine.Reference
}

func (s *sharedStore) add(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	codes := make([][]int, 10)
	for i := range codes {
		codes[i] = []int{1, 2, 3}
	}
	s.voices[id] = []engine.Reference{{Text: "Hello from " + id + ".", Codes: codes}}
}

func (s *sharedStore) List(context.Context) ([]VoiceInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []VoiceInfo{}
	for id := range s.voices {
		out = append(out, VoiceInfo{ID: id, Name: id, Origin: "clone"})
	}
	return out, nil
}

func (s *sharedStore) References(ctx context.Context, id string) ([]engine.Reference, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	refs, ok := s.voices[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrVoiceNotFound, id)
	}
	return refs, nil
}

func (s *sharedStore) Clone(ctx context.Context, req CloneRequest) (VoiceInfo, error) {
	s.mu.Lock()
	_, taken := s.voices["stolen"]
	s.mu.Unlock()
	if taken {
		return VoiceInfo{}, fmt.Errorf("%w: voice \"stolen\" exists: delete it first (DELETE /v1/voices/stolen), or give another id", ErrVoiceExists)
	}
	s.add("stolen")
	return VoiceInfo{ID: "stolen", Name: req.Name, Origin: "clone"}, nil
}

func (s *sharedStore) Delete(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.voices[id]; !ok {
		return ErrVoiceNotFound
	}
	delete(s.voices, id)
	return nil
}

// lookupStore is a sharedStore that can be looked up (VoiceLookup).
type lookupStore struct{ *sharedStore }

func (s lookupStore) Lookup(ctx context.Context, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.voices[id]
	return ok
}

func speakVoice(t *testing.T, url, voice string) (int, string) {
	t.Helper()
	resp := post(t, url, `{"input":"Hello.","voice":"`+voice+`","response_format":"pcm","stream":false}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

// TestSharedStoreOtherHosts: two servers over one store. A voice host A
// makes after host B read its list of voices is spoken by B at once, not
// refused as unknown; a voice A deletes after B read its list gets from B
// the very answer A gives (an unknown voice), not a failure of the engine.
func TestSharedStoreOtherHosts(t *testing.T) {
	store := &sharedStore{voices: map[string][]engine.Reference{}}
	store.add("anna")
	var voices VoiceStore = lookupStore{store}
	a, _, _, _ := startFake(t, func(_ *enginetest.Fake, c *served) { c.Voices = voices })
	b, _, _, _ := startFake(t, func(_ *enginetest.Fake, c *served) { c.Voices = voices })
	if st, body := speakVoice(t, b.URL, "anna"); st != 200 {
		t.Fatalf("B speaking anna: %d %s", st, body)
	}
	// made on A now: B's list (read a moment ago, kept a second) lacks it
	store.add("bert")
	if st, body := speakVoice(t, b.URL, "bert"); st != 200 {
		t.Errorf("B speaking a voice made elsewhere after it listed the voices: %d %s", st, body)
	}
	req, _ := http.NewRequest("DELETE", a.URL+"/v1/voices/anna", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("DELETE on A: %d", resp.StatusCode)
	}
	stA, bodyA := speakVoice(t, a.URL, "anna")
	stB, bodyB := speakVoice(t, b.URL, "anna")
	if stA != 400 || stB != stA || bodyB != bodyA {
		t.Errorf("a voice deleted on A: A answers %d %s, B %d %s; want B to answer as A, 400 unknown voice", stA, bodyA, stB, bodyB)
	}
}

// TestCloneOfATakenIDConflicts: a clone whose id another clone took (on
// this host or another sharing the store) is answered 409 voice_exists.
func TestCloneOfATakenIDConflicts(t *testing.T) {
	store := &sharedStore{voices: map[string][]engine.Reference{}}
	ts, _, _, _ := startFake(t, func(_ *enginetest.Fake, c *served) { c.Voices = store })
	var got []int
	for range 2 {
		ct, body := cloneForm(t, []byte("RIFF"))
		resp, err := http.Post(ts.URL+"/v1/voices", ct, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got = append(got, resp.StatusCode)
		if resp.StatusCode == 409 && !bytes.Contains(msg, []byte(`"voice_exists"`)) {
			t.Errorf("409 without code voice_exists: %s", msg)
		}
	}
	if got[0] != 201 || got[1] != 409 {
		t.Errorf("two clones of one id: %v, want [201 409]", got)
	}
}
