package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/drama-tts/drama/engine/enginetest"
)

// markerState is a QualificationSource whose state a test changes.
type markerState struct {
	mu sync.Mutex
	q  Qualification
}

func (m *markerState) Qualification() Qualification {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.q
}

func (m *markerState) set(q Qualification) {
	m.mu.Lock()
	m.q = q
	m.mu.Unlock()
}

// rawGet sends a GET over its own connection and returns the status code
// and the body as sent.
func rawGet(t *testing.T, url, path string) (int, []byte) {
	t.Helper()
	r := rawDo(t, url, "HTTP/1.1", http.MethodGet, path, "", nil)
	return r.Status, r.Body
}

// TestModelsReportQualification: GET /v1/models and /v1/models/{id} carry
// the host's qualification as the source reports it at each request.
func TestModelsReportQualification(t *testing.T) {
	src := &markerState{q: Qualification{State: Unqualified}}
	ts, _, _, _ := startFake(t, func(_ *enginetest.Fake, c *served) { c.Qualification = src })
	type model struct {
		ID              string   `json:"id"`
		Qualified       *bool    `json:"qualified"`
		Qualification   string   `json:"qualification"`
		Intelligibility string   `json:"intelligibility"`
		WER             *float64 `json:"wer"`
	}
	var last []model
	check := func(want bool, state string) {
		t.Helper()
		code, body := rawGet(t, ts.URL, "/v1/models")
		var list struct {
			Data []model `json:"data"`
		}
		if code != 200 || json.Unmarshal(body, &list) != nil || len(list.Data) != 1 {
			t.Fatalf("GET /v1/models: %d %s", code, body)
		}
		code, body = rawGet(t, ts.URL, "/v1/models/drama-3-test")
		var one model
		if code != 200 || json.Unmarshal(body, &one) != nil {
			t.Fatalf("GET /v1/models/drama-3-test: %d %s", code, body)
		}
		for _, m := range []model{list.Data[0], one} {
			if m.Qualified == nil || *m.Qualified != want || m.Qualification != state {
				t.Fatalf("model %s: qualified %v, qualification %q; want %v, %q", m.ID, m.Qualified, m.Qualification, want, state)
			}
		}
		last = []model{list.Data[0], one}
	}
	check(false, Unqualified)
	src.set(Qualification{State: Qualified, Intelligibility: "intelligibility not checked"})
	check(true, Qualified)
	for _, m := range last {
		if m.Intelligibility != "intelligibility not checked" || m.WER != nil {
			t.Fatalf("not checked: %+v", m)
		}
	}
	wer := 0.0131
	src.set(Qualification{State: Qualified, Intelligibility: "word error rate 1.31 %", WER: &wer})
	check(true, Qualified)
	for _, m := range last {
		if m.Intelligibility != "word error rate 1.31 %" || m.WER == nil || *m.WER != wer {
			t.Fatalf("checked: %+v", m)
		}
	}
	// Only a qualification that holds speaks of its run's words.
	src.set(Qualification{State: Stale, Detail: "its marker is stale", Intelligibility: "word error rate 1.31 %", WER: &wer})
	check(false, Stale)
	for _, m := range last {
		if m.Intelligibility != "" || m.WER != nil {
			t.Fatalf("stale: %+v", m)
		}
	}
}

// TestModelsWithoutQualification: a server given no source says nothing
// of qualification.
func TestModelsWithoutQualification(t *testing.T) {
	ts, _, _, _ := startFake(t, nil)
	_, body := rawGet(t, ts.URL, "/v1/models")
	if strings.Contains(string(body), "qualif") {
		t.Fatalf("GET /v1/models without a source: %s", body)
	}
}

// TestRequireQualified: with RequireQualified, a speech request on an
// unqualified or stale host is a 503 that says what to run; once
// qualified it is served; without RequireQualified it is served anyway.
func TestRequireQualified(t *testing.T) {
	hint := "drama qualify --variant nvfp4 --root /srv/drama --accept-native-numerics"
	src := &markerState{q: Qualification{State: Unqualified, Hint: hint}}
	ts, _, ce, _ := startFake(t, func(_ *enginetest.Fake, c *served) { c.Qualification, c.RequireQualified = src, true })
	for _, q := range []Qualification{{State: Unqualified, Hint: hint}, {State: Stale, Hint: hint, Detail: "its marker is stale: engine binary"}} {
		src.set(q)
		r := rawPost(t, ts.URL, `{"input":"Hello.","stream":false}`)
		var e struct {
			Error struct{ Message, Code string }
		}
		if r.Status != 503 || json.Unmarshal(r.Body, &e) != nil || e.Error.Code != "not_qualified" ||
			!strings.HasPrefix(e.Error.Message, "not qualified on this host: run "+hint) || !strings.Contains(e.Error.Message, q.Detail) {
			t.Fatalf("%s: %d %s", q.State, r.Status, r.Body)
		}
	}
	if n := ce.peak.Load(); n != 0 {
		t.Fatalf("an unqualified host ran %d syntheses", n)
	}
	src.set(Qualification{State: Qualified, Hint: hint})
	if r := rawPost(t, ts.URL, `{"input":"Hello.","stream":false}`); r.Status != 200 {
		t.Fatalf("qualified: %d %s", r.Status, r.Body)
	}

	src.set(Qualification{State: Stale, Hint: hint})
	ts2, _, _, _ := startFake(t, func(_ *enginetest.Fake, c *served) { c.Qualification = src })
	if r := rawPost(t, ts2.URL, `{"input":"Hello.","stream":false}`); r.Status != 200 {
		t.Fatalf("stale without RequireQualified: %d %s", r.Status, r.Body)
	}
}
