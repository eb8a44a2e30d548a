package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/httpapi/apikey"
)

const (
	testAdminKey  = "adm-0123456789abcdef0123"
	testSpeakKey  = "spk-0123456789abcdef0123"
	testVoicesKey = "vox-0123456789abcdef0123"
)

func testKeys(t *testing.T) *apikey.Set {
	t.Helper()
	keys, err := apikey.Parse("keys.txt", strings.NewReader(testAdminKey+" ops admin\n"+testSpeakKey+" app speak\n"+testVoicesKey+" studio voices\n"))
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// consentStore lists one clone with its consent.
type consentStore struct{ recordingStore }

func (*consentStore) List(context.Context) ([]VoiceInfo, error) {
	return []VoiceInfo{{ID: "anna", Name: "Anna", Origin: "clone", Source: "consented",
		Consent: &VoiceConsent{Who: "Anna Example", When: time.Unix(0, 0).UTC(), Statement: "I agree."}}}, nil
}

// call sends method path with the headers (name, value pairs) and body,
// and returns the status, the headers and the body.
func call(t *testing.T, url, method, path, body string, headers ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// apiErrorOf decodes OpenAI's error shape, failing the test on any other.
func apiErrorOf(t *testing.T, body string) (message, typ, code string) {
	t.Helper()
	var e struct {
		Error *struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    string  `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == nil {
		t.Fatalf("not OpenAI's error shape: %v: %s", err, body)
	}
	return e.Error.Message, e.Error.Type, e.Error.Code
}

func bearer(key string) []string { return []string{"Authorization", "Bearer " + key} }

// TestKeysRequiredOnEveryRouteButProbesAndShell: with keys, a request
// without one, or with a wrong one, is a 401 in OpenAI's shape with
// WWW-Authenticate: Bearer on every route, unknown ones included, except
// /health, /ready and the page's shell and assets; and nothing of it runs.
func TestKeysRequiredOnEveryRouteButProbesAndShell(t *testing.T) {
	store := &consentStore{}
	ts, _, ce, _ := startFake(t, func(_ *enginetest.Fake, c *served) { c.Keys = testKeys(t); c.Voices = store })
	routes := [][2]string{
		{"POST", "/v1/audio/speech"}, {"GET", "/v1/models"}, {"GET", "/v1/models/drama-3-test"}, {"GET", "/v1/voices"},
		{"POST", "/v1/voices"}, {"DELETE", "/v1/voices/anna"}, {"GET", "/metrics"}, {"POST", "/ui/clip-check"},
		{"GET", "/nothing"}, {"PUT", "/v1/models"},
	}
	for _, wrong := range [][]string{nil, bearer("adm-0123456789abcdef012"), bearer(""), {"X-Api-Key", "nope"}, {"Authorization", "Basic " + testAdminKey}} {
		for _, rt := range routes {
			code, h, body := call(t, ts.URL, rt[0], rt[1], `{"input":"hi"}`, wrong...)
			msg, typ, c := apiErrorOf(t, body)
			if code != 401 || c != "invalid_api_key" || typ != "invalid_request_error" || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s %s with %v: %d %s %q, want a 401 invalid_api_key with WWW-Authenticate: Bearer", rt[0], rt[1], wrong, code, body, h.Get("WWW-Authenticate"))
			}
			if strings.Contains(msg, testAdminKey[:10]) {
				t.Errorf("the 401 quotes the key: %s", msg)
			}
		}
	}
	if n := ce.peak.Load(); n != 0 || store.clones.Load() != 0 {
		t.Fatalf("refused requests reached the engine (%d) or the store (%d)", n, store.clones.Load())
	}
	for _, open := range []string{"/health", "/ready", "/", "/ui/app.js", "/ui/style.css"} {
		if code, _, body := call(t, ts.URL, "GET", open, ""); code != 200 {
			t.Errorf("GET %s without a key: %d %s, want 200", open, code, body)
		}
	}
	// the right key, as Bearer (any case of the scheme) or X-Api-Key
	for _, h := range [][]string{bearer(testSpeakKey), {"Authorization", "bearer  " + testSpeakKey}, {"X-Api-Key", testSpeakKey}} {
		if code, _, body := call(t, ts.URL, "GET", "/v1/models", "", h...); code != 200 {
			t.Errorf("%v: %d %s", h, code, body)
		}
	}
	code, _, body := call(t, ts.URL, "POST", "/v1/audio/speech", `{"input":"Keyed words.","stream":false}`, bearer(testSpeakKey)...)
	if code != 200 {
		t.Fatalf("speech with a speak key: %d %s", code, body)
	}
}

// TestKeyScopes: a key below the scope a route needs gets a 403 naming the
// scope needed; speak < voices < admin; the consent records of clones are
// listed for admin keys alone.
func TestKeyScopes(t *testing.T) {
	ts, _, _, _ := startFake(t, func(_ *enginetest.Fake, c *served) { c.Keys = testKeys(t); c.Voices = &consentStore{} })
	for _, c := range []struct {
		key, method, path string
		want              int
		scope             string
	}{
		{testSpeakKey, "DELETE", "/v1/voices/anna", 403, "voices"},
		{testSpeakKey, "POST", "/v1/voices", 403, "voices"},
		{testSpeakKey, "POST", "/ui/clip-check", 403, "voices"},
		{testSpeakKey, "GET", "/metrics", 403, "admin"},
		{testVoicesKey, "GET", "/metrics", 403, "admin"},
		{testVoicesKey, "DELETE", "/v1/voices/anna", 404, ""}, // let in: the store has no such file
		{testAdminKey, "DELETE", "/v1/voices/anna", 404, ""},
		{testAdminKey, "GET", "/metrics", 200, ""},
		{testSpeakKey, "GET", "/nothing", 404, ""},
	} {
		code, h, body := call(t, ts.URL, c.method, c.path, "", bearer(c.key)...)
		if code != c.want {
			t.Errorf("%s %s with %s: %d %s, want %d", c.method, c.path, c.key[:3], code, body, c.want)
			continue
		}
		if c.want == 403 {
			msg, _, ec := apiErrorOf(t, body)
			if ec != "insufficient_scope" || !strings.Contains(msg, "needs scope "+c.scope) || !strings.Contains(h.Get("WWW-Authenticate"), `scope="`+c.scope+`"`) {
				t.Errorf("%s %s with %s: %q %q, want the scope %s named", c.method, c.path, c.key[:3], body, h.Get("WWW-Authenticate"), c.scope)
			}
		}
	}
	for key, consent := range map[string]bool{testSpeakKey: false, testVoicesKey: false, testAdminKey: true} {
		_, _, body := call(t, ts.URL, "GET", "/v1/voices", "", bearer(key)...)
		if got := strings.Contains(body, "Anna Example"); got != consent {
			t.Errorf("GET /v1/voices with %s: consent listed %v, want %v: %s", key[:3], got, consent, body)
		}
	}
}

// TestKeyNameReachesTheLogHookNotTheKey: the access log's hook hears the
// key's name, for a request let in and one refused for its scope, never the
// key, and nothing for a refused key.
func TestKeyNameReachesTheLogHookNotTheKey(t *testing.T) {
	_, _, _, srv := startFake(t, func(_ *enginetest.Fake, c *served) { c.Keys = testKeys(t) })
	var heard []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.Handler().ServeHTTP(w, r.WithContext(WithKeyName(r.Context(), func(n string) { heard = append(heard, n) })))
	})
	for _, c := range []struct{ path, key string }{{"/v1/models", testAdminKey}, {"/metrics", testSpeakKey}, {"/v1/models", "wrong-0123456789abcdef"}} {
		req, _ := http.NewRequest("GET", c.path, nil)
		req.Header.Set("Authorization", "Bearer "+c.key)
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	if strings.Join(heard, ",") != "ops,app" {
		t.Fatalf("the hook heard %q, want ops then app", heard)
	}
}

// TestInlineReferencesNeedScopeOrFlag: a speech request that carries its
// own references needs a key of scope voices, or without keys
// --allow-inline-references; each refusal names what lets it through.
func TestInlineReferencesNeedScopeOrFlag(t *testing.T) {
	row := strings.TrimSuffix(strings.Repeat("5,", 20), ",")
	body := `{"input":"With my own voice.","stream":false,"references":[{"text":"Words of the reference.","vq_codes":[` +
		strings.TrimSuffix(strings.Repeat("["+row+"],", 10), ",") + `]}]}`
	for _, c := range []struct {
		name   string
		keys   bool
		allow  bool
		key    string
		want   int
		advice string
	}{
		{"no keys", false, false, "", 403, "--allow-inline-references"},
		{"no keys, allowed", false, true, "", 200, ""},
		{"speak key", true, false, testSpeakKey, 403, "needs scope voices"},
		{"voices key", true, false, testVoicesKey, 200, ""},
		{"admin key", true, false, testAdminKey, 200, ""},
		{"speak key, allowed", true, true, testSpeakKey, 200, ""},
	} {
		ts, _, ce, _ := startFake(t, func(_ *enginetest.Fake, cfg *served) {
			cfg.AllowInlineReferences = c.allow
			if c.keys {
				cfg.Keys = testKeys(t)
			}
		})
		var h []string
		if c.key != "" {
			h = bearer(c.key)
		}
		code, _, got := call(t, ts.URL, "POST", "/v1/audio/speech", body, h...)
		if code != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, code, got, c.want)
			continue
		}
		if c.want == 403 {
			msg, _, _ := apiErrorOf(t, got)
			if !strings.Contains(msg, c.advice) || !strings.Contains(got, `"param":"references"`) {
				t.Errorf("%s: %s, want advice naming %s", c.name, got, c.advice)
			}
			if ce.peak.Load() != 0 {
				t.Errorf("%s: the refused references reached the engine", c.name)
			}
		}
		// a request without references needs neither
		if code, _, got := call(t, ts.URL, "POST", "/v1/audio/speech", `{"input":"Plain.","stream":false}`, h...); code != 200 {
			t.Errorf("%s: without references: %d %s", c.name, code, got)
		}
	}
}

// TestSetKeysReplacesKeys: a reload's keys take over at once; keys cannot
// be turned on or off once the server runs.
func TestSetKeysReplacesKeys(t *testing.T) {
	ts, _, _, srv := startFake(t, func(_ *enginetest.Fake, c *served) { c.Keys = testKeys(t) })
	next, err := apikey.Parse("keys.txt", strings.NewReader("new-0123456789abcdef0123 rotated admin\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.SetKeys(next); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := call(t, ts.URL, "GET", "/v1/models", "", bearer(testAdminKey)...); code != 401 {
		t.Errorf("the replaced key: %d, want 401", code)
	}
	if code, _, _ := call(t, ts.URL, "GET", "/v1/models", "", bearer("new-0123456789abcdef0123")...); code != 200 {
		t.Errorf("the new key: %d, want 200", code)
	}
	if err := srv.SetKeys(nil); err == nil {
		t.Error("a server with keys was left with none")
	}
	if code, _, _ := call(t, ts.URL, "GET", "/v1/models", ""); code != 401 {
		t.Errorf("after a refused SetKeys(nil): %d, want 401", code)
	}
	_, _, _, open := startFake(t, nil)
	if err := open.SetKeys(next); err == nil {
		t.Error("a server without keys was given some")
	}
}
