package servecmd

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/httpapi"
)

// A clone on a root without the variant says so, and claims no restart.
func TestCloneWithoutTheVariantSaysWhatIsMissing(t *testing.T) {
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	f.Global.Root = t.TempDir()
	install := engine.Install{Root: f.Global.Root, Variant: "full", ModelDir: filepath.Join(f.Global.Root, "full")}
	store := newVoiceStore(filepath.Join(f.Global.Root, "voices"), nil, install, installReady(f, install))
	ts := httpServer(t, fakeAPI(t, enginetest.NewFake(), httpapi.Config{Voices: store}).Handler())

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, v := range map[string]string{"name": "Anna", "consent_who": "Anna Example", "consent_statement": "I agree.", "transcript": "Hello there."} {
		mw.WriteField(k, v)
	}
	fw, _ := mw.CreateFormFile("clip", "take1.wav")
	fw.Write([]byte("RIFF"))
	mw.Close()
	resp, err := http.Post(ts.URL+"/v1/voices", mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	want := "full is not installed in " + f.Global.Root + ": run drama fetch --variant full --root " + f.Global.Root
	if resp.StatusCode == http.StatusServiceUnavailable || strings.Contains(string(msg), "restarted") || !strings.Contains(string(msg), want) {
		t.Fatalf("%d %s\nwant no restart claimed and %q", resp.StatusCode, msg, want)
	}
}

// curl -d without -H sends a form's Content-Type: the 415 names the header
// to send.
func TestSpeechWithoutJSONContentTypeNamesTheHeader(t *testing.T) {
	ts := httpServer(t, fakeAPI(t, enginetest.NewFake(), httpapi.Config{}).Handler())
	resp, err := http.Post(ts.URL+"/v1/audio/speech", "application/x-www-form-urlencoded", strings.NewReader(`{"input":"Hello."}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusUnsupportedMediaType || !strings.Contains(string(msg), "Content-Type: application/json") {
		t.Fatalf("%d %s", resp.StatusCode, msg)
	}
}
