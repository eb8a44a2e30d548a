package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
)

// memStore is a VoiceStore in memory that also makes inline references
// (counting the recordings it encodes) and edits its clones.
type memStore struct {
	mu     sync.Mutex
	voices map[string]VoiceInfo
	made   int // recordings encoded into references
	clones []CloneRequest
}

func newMemStore() *memStore {
	return &memStore{voices: map[string]VoiceInfo{"mine": {ID: "mine", Name: "My Voice", Origin: "clone", Description: "warm", Created: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}}}
}

func (m *memStore) List(context.Context) ([]VoiceInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []VoiceInfo
	for _, v := range m.voices {
		out = append(out, v)
	}
	return out, nil
}

func (m *memStore) References(_ context.Context, id string) ([]engine.Reference, error) {
	return []engine.Reference{{Text: "mine", Codes: codes(3)}}, nil
}

func (m *memStore) Clone(_ context.Context, req CloneRequest) (VoiceInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.clones = append(m.clones, req)
	v := VoiceInfo{ID: strings.ToLower(req.Name), Name: req.Name, Origin: "clone",
		Consent: &VoiceConsent{Who: req.ConsentWho, Statement: req.ConsentStatement}}
	m.voices[v.ID] = v
	return v, nil
}

func (m *memStore) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.voices[id]; !ok {
		return ErrVoiceNotFound
	}
	delete(m.voices, id)
	return nil
}

func (m *memStore) MakeReferences(_ context.Context, req CloneRequest) ([]engine.Reference, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if req.Source != "synthetic" && (req.ConsentWho == "" || req.ConsentStatement == "") {
		return nil, engine.Invalidf("no consent")
	}
	var out []engine.Reference
	for _, c := range req.Clips {
		m.made++
		out = append(out, engine.Reference{Text: c.Transcript, Codes: codes(len(c.Data))})
	}
	return out, nil
}

func (m *memStore) Edit(_ context.Context, id string, e VoiceEdit) (VoiceInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.voices[id]
	if !ok {
		return VoiceInfo{}, ErrVoiceNotFound
	}
	if e.Name != nil {
		v.Name = *e.Name
	}
	m.voices[id] = v
	return v, nil
}

func codes(frames int) [][]int {
	out := make([][]int, engine.NumCodebooks)
	for i := range out {
		out[i] = make([]int, frames)
	}
	return out
}

func startFish(t *testing.T) (string, *memStore) {
	t.Helper()
	store := newMemStore()
	ts, _, _, _ := startFake(t, func(_ *enginetest.Fake, c *served) { c.Voices = store; c.BuiltinVoice = "default" })
	return ts.URL, store
}

func tts(t *testing.T, url, ct string, body []byte, headers map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/tts", bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	req.Header.Set("model", "s1")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func mp(t *testing.T, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFishTTSSpeaksAsSpeech: Fish's POST /v1/tts, in msgpack as its SDK
// sends it and in JSON, gives the audio POST /v1/audio/speech gives for
// the same words and voice, streamed as WAV or PCM.
func TestFishTTSSpeaksAsSpeech(t *testing.T) {
	url, _ := startFish(t)
	want := rawPost(t, url, `{"input":"Hello from Fish.","voice":"alice","response_format":"pcm"}`)
	if want.Status != 200 || len(want.Body) == 0 {
		t.Fatalf("speech: %d", want.Status)
	}
	resp, got := tts(t, url, "application/msgpack", mp(t, map[string]any{"text": "Hello from Fish.", "reference_id": "alice", "format": "pcm", "latency": "balanced", "normalize": true, "temperature": 0.7}), nil)
	if resp.StatusCode != 200 || !bytes.Equal(got, want.Body) {
		t.Fatalf("msgpack: %d, %d bytes, want %d bytes of the speech route's PCM: %.200s", resp.StatusCode, len(got), len(want.Body), got)
	}
	if u := resp.Header.Get("X-Drama-Unapplied"); u != "normalize, temperature" && u != "temperature, normalize" {
		t.Errorf("X-Drama-Unapplied %q: want normalize and temperature named", u)
	}
	resp, got = tts(t, url, "application/json", []byte(`{"text":"Hello from Fish.","reference_id":"alice","format":"wav","prosody":{"speed":1,"volume":0}}`), nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "audio/wav" || !bytes.Equal(got[44:], want.Body) {
		t.Fatalf("json wav: %d %s, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(got))
	}
}

// TestFishTTSRefusals: what drama cannot honour is a 422 naming the field
// as Fish's body names it; an unknown reference_id a 404.
func TestFishTTSRefusals(t *testing.T) {
	url, _ := startFish(t)
	deep := []byte{0x82, 0xa4, 't', 'e', 'x', 't', 0xa2, 'h', 'i', 0xa4, 'j', 'u', 'n', 'k'}
	deep = append(deep, bytes.Repeat([]byte{0x91}, 1<<20)...) // a million nested arrays
	for _, c := range []struct {
		name   string
		ct     string
		body   []byte
		status int
		param  string
	}{
		{"no text", "application/msgpack", mp(t, map[string]any{"format": "wav"}), 422, "text"},
		{"empty text", "application/json", []byte(`{"text":"  "}`), 422, "text"},
		{"speed", "application/msgpack", mp(t, map[string]any{"text": "Hi.", "prosody": map[string]any{"speed": 1.5}}), 422, "prosody.speed"},
		{"volume", "application/json", []byte(`{"text":"Hi.","format":"wav","prosody":{"volume":6}}`), 422, "prosody.volume"},
		{"rate without ffmpeg", "application/msgpack", mp(t, map[string]any{"text": "Hi.", "format": "wav", "sample_rate": 22050}), 422, "sample_rate"},
		{"mp3 without ffmpeg", "application/msgpack", mp(t, map[string]any{"text": "Hi."}), 422, "format"},
		{"flac", "application/msgpack", mp(t, map[string]any{"text": "Hi.", "format": "flac"}), 422, "format"},
		{"bitrate", "application/msgpack", mp(t, map[string]any{"text": "Hi.", "format": "wav", "mp3_bitrate": 100}), 422, "mp3_bitrate"},
		{"unknown field", "application/msgpack", mp(t, map[string]any{"text": "Hi.", "format": "wav", "emotion": "happy"}), 422, "emotion"},
		{"wrong type", "application/msgpack", mp(t, map[string]any{"text": 12}), 422, "text"},
		{"wrong type json", "application/json", []byte(`{"text":"Hi.","sample_rate":"high"}`), 422, "sample_rate"},
		{"nested bomb", "application/msgpack", deep, 422, "junk"},
		{"trailing", "application/msgpack", append(mp(t, map[string]any{"text": "Hi."}), 0xc0), 422, ""},
		{"unknown voice", "application/msgpack", mp(t, map[string]any{"text": "Hi.", "format": "wav", "reference_id": "nobody"}), 404, "reference_id"},
		{"references without consent", "application/msgpack", mp(t, map[string]any{"text": "Hi.", "format": "wav", "references": []any{map[string]any{"audio": []byte("RIFF"), "text": "Hello."}}}), 422, "references"},
		{"text plain", "text/plain", []byte("Hi."), 415, ""},
		{"too large", "application/msgpack", mp(t, map[string]any{"text": "Hi.", "junk": bytes.Repeat([]byte{1}, MaxFishBodyBytes)}), 413, ""},
	} {
		resp, body := tts(t, url, c.ct, c.body, nil)
		var e struct {
			Error struct {
				Param   *string `json:"param"`
				Message string  `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		param := ""
		if e.Error.Param != nil {
			param = *e.Error.Param
		}
		if resp.StatusCode != c.status || param != c.param {
			t.Errorf("%s: %d param %q (%s), want %d naming %q", c.name, resp.StatusCode, param, e.Error.Message, c.status, c.param)
		}
		if c.name == "too large" && !strings.Contains(e.Error.Message, fmt.Sprintf("over %d bytes: send shorter reference recordings", MaxFishBodyBytes)) {
			t.Errorf("%s: %q does not say the limit and what to send instead", c.name, e.Error.Message)
		}
		if c.name == "references without consent" && !strings.Contains(e.Error.Message, HeaderConsentWho) {
			t.Errorf("%s: %q does not say how to give consent", c.name, e.Error.Message)
		}
	}
}

// TestFishInlineReferencesCached: inline references need consent; the same
// recording and words are encoded once, and what they make is spoken.
func TestFishInlineReferencesCached(t *testing.T) {
	url, store := startFish(t)
	body := mp(t, map[string]any{"text": "Say it in my voice.", "format": "pcm",
		"references": []any{map[string]any{"audio": bytes.Repeat([]byte{1}, 7), "text": "Hello there."}}})
	consent := map[string]string{HeaderConsentWho: "Ada", HeaderConsentStatement: "I agree to the cloning of my voice."}
	plain, _ := tts(t, url, "application/msgpack", mp(t, map[string]any{"text": "Say it in my voice.", "format": "pcm"}), nil)
	plain.Body.Close()
	var first []byte
	for i := range 3 {
		resp, got := tts(t, url, "application/msgpack", body, consent)
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, got)
		}
		if i == 0 {
			first = got
		} else if !bytes.Equal(got, first) {
			t.Fatalf("request %d spoke other audio than the first", i)
		}
	}
	if store.made != 1 {
		t.Fatalf("the same reference was encoded %d times, want once", store.made)
	}
	c := newRefCache(2, 1<<20)
	for i := range 3 {
		c.put(refKey([]byte{byte(i)}, "x"), engine.Reference{Text: "x", Codes: codes(1)})
	}
	if _, ok := c.get(refKey([]byte{0}, "x")); ok || c.len() != 2 {
		t.Fatalf("the cache holds %d, the oldest kept %v: want it bounded at 2", c.len(), ok)
	}
	big := newRefCache(10, 1000)
	big.put(refKey(nil, "a"), engine.Reference{Text: "a", Codes: codes(20)})
	big.put(refKey(nil, "b"), engine.Reference{Text: "b", Codes: codes(20)})
	if big.len() != 0 {
		t.Fatalf("references over the byte bound are kept: %d", big.len())
	}
}

func getJSON(t *testing.T, method, url string, body io.Reader, ct string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, body)
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, b)
		}
	}
	return resp.StatusCode
}

// TestFishModels: GET /model lists the voices served as ModelEntity
// values, paged and filtered as the SDK asks; get, update, delete.
func TestFishModels(t *testing.T) {
	url, store := startFish(t)
	var page struct {
		Total int           `json:"total"`
		Items []ModelEntity `json:"items"`
	}
	if getJSON(t, "GET", url+"/model?page_size=2&page_number=2", nil, "", &page) != 200 || page.Total != 4 || len(page.Items) != 2 {
		t.Fatalf("page 2 of 2: %+v", page)
	}
	getJSON(t, "GET", url+"/model?self=true", nil, "", &page)
	if page.Total != 1 || page.Items[0].ID != "mine" || page.Items[0].Description != "warm" || page.Items[0].CreatedAt != "2025-01-02T03:04:05Z" || page.Items[0].State != "trained" {
		t.Fatalf("self: %+v", page)
	}
	getJSON(t, "GET", url+"/model?title=ALI", nil, "", &page)
	if page.Total != 1 || page.Items[0].ID != "alice" || page.Items[0].CreatedAt != "" {
		t.Fatalf("title: %+v", page)
	}
	getJSON(t, "GET", url+"/model?tag%5B0%5D=english", nil, "", &page)
	if page.Total != 0 {
		t.Fatalf("a tag matched voices drama keeps no tags on: %+v", page)
	}
	var m ModelEntity
	if getJSON(t, "GET", url+"/model/default", nil, "", &m) != 200 || m.Drama.Origin != "builtin" {
		t.Fatalf("get default: %+v", m)
	}
	if s := getJSON(t, "GET", url+"/model/nobody", nil, "", nil); s != 404 {
		t.Fatalf("get unknown: %d", s)
	}
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	mw.WriteField("title", "Renamed")
	mw.Close()
	if s := getJSON(t, "PATCH", url+"/model/mine", &b, mw.FormDataContentType(), nil); s != 200 || store.voices["mine"].Name != "Renamed" {
		t.Fatalf("update: %d %+v", s, store.voices["mine"])
	}
	b.Reset()
	mw = multipart.NewWriter(&b)
	mw.WriteField("visibility", "public")
	mw.Close()
	if s := getJSON(t, "PATCH", url+"/model/mine", &b, mw.FormDataContentType(), nil); s != 422 {
		t.Fatalf("visibility public: %d, want 422", s)
	}
	b.Reset()
	mw = multipart.NewWriter(&b)
	mw.WriteField("description", "bright")
	mw.Close()
	if s := getJSON(t, "PATCH", url+"/model/mine", &b, mw.FormDataContentType(), nil); s != 422 {
		t.Fatalf("a description the voice file cannot keep: %d, want 422", s)
	}
	if s := getJSON(t, "DELETE", url+"/model/alice", nil, "", nil); s != 404 {
		t.Fatalf("delete an engine voice: %d, want 404", s)
	}
	if s := getJSON(t, "DELETE", url+"/model/mine", nil, "", nil); s != 200 || len(store.voices) != 0 {
		t.Fatalf("delete: %d", s)
	}
}

// TestFishCreateModelConsent: POST /model without consent is a 422 that
// says how to give it; with the consent headers the clone records it, and
// texts sent as one comma-joined field are the recordings' words.
func TestFishCreateModelConsent(t *testing.T) {
	url, store := startFish(t)
	form := func() (string, []byte) {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		mw.WriteField("type", "tts")
		mw.WriteField("title", "Ada")
		mw.WriteField("train_mode", "fast")
		for range 2 {
			fw, _ := mw.CreateFormFile("voices", "take.wav")
			fw.Write([]byte("RIFF...."))
		}
		mw.WriteField("texts", "Hello there.,Good morning.")
		mw.Close()
		return mw.FormDataContentType(), b.Bytes()
	}
	ct, body := form()
	var e struct {
		Error struct{ Message string } `json:"error"`
	}
	if s := getJSON(t, "POST", url+"/model", bytes.NewReader(body), ct, &e); s != 422 || !strings.Contains(e.Error.Message, HeaderConsentStatement) {
		t.Fatalf("no consent: %d %q", s, e.Error.Message)
	}
	req, _ := http.NewRequest("POST", url+"/model", bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	req.Header.Set(HeaderConsentWho, "Ada Lovelace")
	req.Header.Set(HeaderConsentStatement, "I agree.")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var m ModelEntity
	json.NewDecoder(resp.Body).Decode(&m)
	resp.Body.Close()
	if resp.StatusCode != 201 || m.ID != "ada" || m.Title != "Ada" {
		t.Fatalf("create: %d %+v", resp.StatusCode, m)
	}
	c := store.clones[len(store.clones)-1]
	if c.ConsentWho != "Ada Lovelace" || c.ConsentStatement != "I agree." || len(c.Clips) != 2 || c.Clips[0].Transcript != "Hello there." || c.Clips[1].Transcript != "Good morning." {
		t.Fatalf("clone request %+v", c)
	}
}

// TestFishRoutesUnderKeys: with API keys, every Fish route needs a key
// (401 without one or with a wrong one, the WebSocket's upgrade
// included); speech and the listings need speak, cloning, renaming and
// deleting need voices, and so do inline references (they clone); a
// clone's consent is shown to admin keys only.
func TestFishRoutesUnderKeys(t *testing.T) {
	store := newMemStore()
	ts, _, _, _ := startFake(t, func(_ *enginetest.Fake, c *served) { c.Keys = testKeys(t); c.Voices = store })
	store.voices["mine"] = VoiceInfo{ID: "mine", Name: "Mine", Origin: "clone", Consent: &VoiceConsent{Who: "Ada", Statement: "I agree."}}
	ok := `{"text":"Keyed words.","format":"pcm"}`
	for _, rt := range [][2]string{{"POST", "/v1/tts"}, {"GET", "/v1/tts/live"}, {"GET", "/model"}, {"GET", "/model/mine"}, {"POST", "/model"}, {"PATCH", "/model/mine"}, {"DELETE", "/model/mine"}} {
		for _, wrong := range [][]string{nil, bearer("spk-0123456789abcdef012x")} {
			if code, _, body := call(t, ts.URL, rt[0], rt[1], ok, wrong...); code != 401 {
				t.Errorf("%s %s with %v: %d %s, want 401", rt[0], rt[1], wrong, code, body)
			}
		}
	}
	if code, _, body := call(t, ts.URL, "POST", "/v1/tts", ok, bearer(testSpeakKey)...); code != 200 {
		t.Fatalf("tts with a speak key: %d %s", code, body)
	}
	for _, rt := range [][2]string{{"POST", "/model"}, {"PATCH", "/model/mine"}, {"DELETE", "/model/mine"}} {
		if code, _, body := call(t, ts.URL, rt[0], rt[1], "", bearer(testSpeakKey)...); code != 403 || !strings.Contains(body, "voices") {
			t.Errorf("%s %s with a speak key: %d %s, want a 403 naming voices", rt[0], rt[1], code, body)
		}
	}
	body := mp(t, map[string]any{"text": "Hi.", "format": "pcm", "references": []any{map[string]any{"audio": []byte("RIFF"), "text": "Hello."}}})
	resp, b := tts(t, ts.URL, "application/msgpack", body, map[string]string{"Authorization": "Bearer " + testSpeakKey, HeaderConsentWho: "Ada", HeaderConsentStatement: "I agree."})
	if resp.StatusCode != 403 || !strings.Contains(string(b), `"references"`) || store.made != 0 {
		t.Fatalf("inline references with a speak key: %d %s (%d encoded), want a 403 naming references", resp.StatusCode, b, store.made)
	}
	resp, b = tts(t, ts.URL, "application/msgpack", body, map[string]string{"Authorization": "Bearer " + testVoicesKey, HeaderConsentWho: "Ada", HeaderConsentStatement: "I agree."})
	if resp.StatusCode != 200 || store.made != 1 {
		t.Fatalf("inline references with a voices key: %d %s", resp.StatusCode, b)
	}
	for key, shown := range map[string]bool{testSpeakKey: false, testVoicesKey: false, testAdminKey: true} {
		_, _, body := call(t, ts.URL, "GET", "/model/mine", "", bearer(key)...)
		var m ModelEntity
		json.Unmarshal([]byte(body), &m)
		if (m.Drama.Consent != nil) != shown || m.Author.Nickname == "" {
			t.Errorf("GET /model/mine with %s: consent %+v, author %+v; want the consent shown %v", key[:3], m.Drama.Consent, m.Author, shown)
		}
	}
}
