package servecmd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/engine/native/nativetest"
	"github.com/drama-tts/drama/engine/supervise"
	"github.com/drama-tts/drama/voices/clip"
)

// speechClip is 16 s of the recorded speech fixture at 44.1 kHz.
func speechClip(t *testing.T, from int) []byte {
	t.Helper()
	a, err := (clip.Decoder{}).Decode(context.Background(), "../../../voices/clip/testdata/speech.wav")
	if err != nil {
		t.Fatal(err)
	}
	x := clip.Resample(a.Mono()[from*a.Rate:(from+16)*a.Rate], a.Rate, clip.SampleRate)
	return clip.EncodeWAV(x, clip.SampleRate)
}

// catalogClones, when more than 0, is the clones serveMetal's catalog
// holds.
var catalogClones int

// serveMetal runs drama serve's HTTP server in front of the Metal flavor
// of the native engine driving the stand-in in its Metal shape.
func serveMetal(t *testing.T) (addr, root string) {
	t.Helper()
	return serveMetalWith(t, "")
}

// serveMetalWith is serveMetal with more of drama serve's flags.
func serveMetalWith(t *testing.T, flags string) (addr, root string) {
	t.Helper()
	bin, err := nativetest.Build(t.TempDir(), "drama3-generate", nativetest.StandinPackage)
	if err != nil {
		t.Fatal(err)
	}
	eng := native.NewEngine(native.Metal, native.EngineOptions{AnyOS: true})
	req := nativetest.StartRequest(t, native.Metal, bin)
	root = t.TempDir()
	opts := serveOptions(t, "", "--voices "+req.VoicesDir+" "+flags)
	opts.catalogClones = catalogClones
	sup := supervise.New(func(context.Context) (engine.Engine, func(), error) { return eng, func() {}, nil }, req, nil)
	_, api, addr := serveOver(t, opts, sup, root, req.Install)
	d, err := eng.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	api.SetCapabilities(d.Capabilities)
	return addr, root
}

type cloneReply struct {
	ID            string                 `json:"id"`
	CatalogName   string                 `json:"catalog_name"`
	EngineRestart *httpapi.EngineRestart `json:"engine_restart"`
}

// cloneForm is a POST /v1/voices body cloning wav as voice id: its type
// and bytes.
func cloneForm(id string, wav []byte) (string, []byte) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	mw.WriteField("id", id)
	mw.WriteField("name", id)
	mw.WriteField("source", "synthetic")
	fw, _ := mw.CreateFormFile("clip", id+".wav")
	fw.Write(wav)
	mw.WriteField("transcript", "The quick brown fox jumps over the lazy dog.")
	mw.Close()
	return mw.FormDataContentType(), b.Bytes()
}

func cloneOn(t *testing.T, addr, id string, wav []byte) cloneReply {
	t.Helper()
	ct, b := cloneForm(id, wav)
	resp, err := http.Post("http://"+addr+"/v1/voices", ct, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("clone %s: %d %s", id, resp.StatusCode, body)
	}
	var r cloneReply
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// speak asks for speech in voice and returns the status and the restart
// header.
func speak(t *testing.T, addr, voice string) (int, string) {
	t.Helper()
	resp, err := http.Post("http://"+addr+"/v1/audio/speech", "application/json", strings.NewReader(`{"input":"Hello there.","voice":"`+voice+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Logf("speech in %s: %s", voice, body)
	} else if len(body) <= 44 {
		t.Fatalf("speech in %s: %d bytes", voice, len(body))
	}
	return resp.StatusCode, resp.Header.Get("X-Engine-Restart")
}

// TestMetalClonePublishedToTheCatalog: on the Metal build a clone is
// published to the catalog under its content name, the engine restarted
// within the request (the reply says so), and the voice is spoken; the
// catalog keeps the most recently spoken clones, and a clone it dropped is
// published again by the request that asks for it, which says it paid the
// restart.
func TestMetalClonePublishedToTheCatalog(t *testing.T) {
	defer func(n int) { catalogClones = n }(catalogClones)
	catalogClones = 1 // for serveMetal
	addr, root := serveMetal(t)

	anna := cloneOn(t, addr, "anna", speechClip(t, 0))
	file, err := os.ReadFile(filepath.Join(root, "voices", "anna.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(file)
	if want := "clone-" + hex.EncodeToString(sum[:8]); anna.CatalogName != want {
		t.Fatalf("catalog name %q, want %q", anna.CatalogName, want)
	}
	if anna.EngineRestart == nil || !strings.Contains(anna.EngineRestart.Message, "paid for the restart") {
		t.Fatalf("the reply does not say the request restarted the engine: %+v", anna.EngineRestart)
	}
	cat, _ := filepath.Glob(filepath.Join(root, ".drama", "catalog", "*.json"))
	if len(cat) != 2 || !regexp.MustCompile(`/(alice|clone-[0-9a-f]{16})\.json$`).MatchString(cat[0]) {
		t.Fatalf("catalog: %v, want alice and the clone", cat)
	}
	published, _ := os.ReadFile(filepath.Join(root, ".drama", "catalog", anna.CatalogName+".json"))
	if !bytes.Contains(published, []byte(`"drama3-http-voice/1"`)) {
		t.Fatalf("published voice is not in the catalog's format: %.200s", published)
	}
	list, _ := http.Get("http://" + addr + "/v1/voices")
	lb, _ := io.ReadAll(list.Body)
	list.Body.Close()
	if !strings.Contains(string(lb), `"id":"anna"`) || !strings.Contains(string(lb), `"id":"alice"`) || strings.Contains(string(lb), `"id":"clone-`) {
		t.Fatalf("voices: %s", lb)
	}
	if code, restart := speak(t, addr, "anna"); code != 200 || restart != "" {
		t.Fatalf("speech in the published clone: %d, restart %q", code, restart)
	}

	// a second clone takes the catalog's one place; anna comes back on demand
	ben := cloneOn(t, addr, "ben", speechClip(t, 4))
	if ben.EngineRestart == nil {
		t.Fatal("second clone: no restart reported")
	}
	if code, restart := speak(t, addr, "anna"); code != 200 || !strings.Contains(restart, "paid for the restart") {
		t.Fatalf("speech in a clone the catalog dropped: %d, restart header %q", code, restart)
	}
	if code, restart := speak(t, addr, "anna"); code != 200 || restart != "" {
		t.Fatalf("speech in anna again: %d, restart %q", code, restart)
	}
	if code, _ := speak(t, addr, "alice"); code != 200 {
		t.Fatalf("the operator's own voice after restarts: %d", code)
	}
	spoken, _ := os.ReadFile(filepath.Join(root, ".drama", "spoken.list"))
	if string(spoken) != "anna\nben\n" {
		t.Fatalf("spoken order %q", spoken)
	}
}

// TestMetalFailedSynthesisIsNoRestart: a synthesis the stand-in fails
// ([standin:fail]) while it stays up leaves the engine ready: GET /ready
// answers 200 at once, the next clone publishes to the catalog with the
// restart it asks for (not a 503 saying a restart is under way), and no
// restart after a failure is counted.
func TestMetalFailedSynthesisIsNoRestart(t *testing.T) {
	addr, _ := serveMetal(t)
	resp, err := http.Post("http://"+addr+"/v1/audio/speech", "application/json",
		strings.NewReader(`{"input":"Hello there. [standin:fail] And more.","voice":"alice","stream":false}`))
	if err != nil {
		t.Fatal(err)
	}
	body, readErr := io.ReadAll(resp.Body)
	resp.Body.Close()
	// a whole reply goes out as the engine's audio arrives: its failure
	// cuts it short of its Content-Length
	if resp.StatusCode != http.StatusOK || readErr == nil {
		t.Fatalf("the failing synthesis: %d, %d bytes read without an error: want a reply cut short", resp.StatusCode, len(body))
	}
	ready, err := http.Get("http://" + addr + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := io.ReadAll(ready.Body)
	ready.Body.Close()
	if ready.StatusCode != http.StatusOK {
		t.Fatalf("/ready after a failed synthesis of a live engine: %d %s", ready.StatusCode, rb)
	}
	if r := cloneOn(t, addr, "anna", speechClip(t, 0)); r.EngineRestart == nil {
		t.Fatalf("the clone did not publish to the catalog: %+v", r)
	}
	if n := metric(t, addr, "drama_engine_restarts_total"); n != "0" {
		t.Fatalf("drama_engine_restarts_total %s, want 0", n)
	}
}

// TestMetalCloneFromAnotherHost: two Metal drama serve share --voice-store.
// A clone made on A is published to B's catalog by the first request on B
// that asks for it (B's engine restarted, the request says it paid), and
// once A deletes it B answers a request for it as A does: an unknown voice.
func TestMetalCloneFromAnotherHost(t *testing.T) {
	shared := t.TempDir()
	a, _ := serveMetalWith(t, "--voice-store "+shared)
	b, rootB := serveMetalWith(t, "--voice-store "+shared)
	cloneOn(t, a, "anna", speechClip(t, 0))
	if code, restart := speak(t, b, "anna"); code != 200 || !strings.Contains(restart, "paid for the restart") {
		t.Fatalf("B speaking a clone made on A: %d, restart header %q", code, restart)
	}
	if code, restart := speak(t, b, "anna"); code != 200 || restart != "" {
		t.Fatalf("B speaking it again: %d, restart %q", code, restart)
	}
	if b, _ := os.ReadFile(filepath.Join(rootB, ".drama", "spoken.list")); string(b) != "anna\n" {
		t.Errorf("B's order of spoken clones: %q", b)
	}
	req, _ := http.NewRequest("DELETE", "http://"+a+"/v1/voices/anna", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("delete on A: %d", resp.StatusCode)
	}
	answer := func(addr string) string {
		resp, err := http.Post("http://"+addr+"/v1/audio/speech", "application/json", strings.NewReader(`{"input":"Hello there.","voice":"anna"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.Status + " " + string(body)
	}
	onA, onB := answer(a), answer(b)
	if !strings.HasPrefix(onA, "400 ") || !strings.Contains(onA, "unknown voice") || onB != onA {
		t.Errorf("a clone deleted on A: A answers %s, B %s; want B to answer as A, an unknown voice", onA, onB)
	}
}
