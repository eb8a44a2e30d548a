package servecmd

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/clone/clonetest"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/engine/httpapi/httpapitest"
	"github.com/drama-tts/drama/engine/httpapi/upload/uploadtest"
	"github.com/drama-tts/drama/engine/supervise"
	"github.com/drama-tts/drama/internal/model"
)

// A clone on a root without the variant says so, and claims no restart.
func TestCloneWithoutTheVariantSaysWhatIsMissing(t *testing.T) {
	root := t.TempDir()
	install := engine.Install{Root: root, Variant: "full", ModelDir: filepath.Join(root, "full")}
	fake, sup := supervisedFake(0)
	_, api, addr := serveOver(t, serveOptions(t, root, ""), sup, root, install)
	api.SetCapabilities(fake.Desc.Capabilities)
	ts := struct{ URL string }{"http://" + addr}

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
	want := "full is not installed in " + root + ": run drama fetch --variant full --root " + root
	if resp.StatusCode == http.StatusServiceUnavailable || strings.Contains(string(msg), "restarted") || !strings.Contains(string(msg), want) {
		t.Fatalf("%d %s\nwant no restart claimed and %q", resp.StatusCode, msg, want)
	}
}

// curl -d without -H sends a form's Content-Type: the 415 names the header
// to send.
func TestSpeechWithoutJSONContentTypeNamesTheHeader(t *testing.T) {
	ts := httpapitest.Serve(t, httpapitest.Fake(t, enginetest.NewFake(), httpapi.Config{}).Handler())
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

// TestServeSlowUploadHoldsNoSlot plays a slow-loris uploader against drama
// serve as the command builds it (--upload-timeout 2s, --clone-wait 0: no
// wait for the clone slot): while a clone request trickles in a byte at a
// time, a normal clone is made through the engine's encoder, and the slow
// one is answered 408 naming --upload-timeout; nothing is left under
// <root>/.drama/uploads.
func TestServeSlowUploadHoldsNoSlot(t *testing.T) {
	fake := enginetest.NewFake()
	enc := encodingFake{Fake: fake, enc: &clonetest.Encoder{}}
	sup := supervise.New(func(context.Context) (engine.Engine, func(), error) { return enc, func() {}, nil }, engine.StartRequest{}, nil)
	root := t.TempDir()
	_, api, addr := serveOver(t, serveOptions(t, "", "--upload-timeout 2s --clone-wait 0"), sup, root, engine.Install{})
	api.SetCapabilities(fake.Desc.Capabilities)
	uploads := filepath.Join(root, model.StateDirName, "uploads")
	ct, body := cloneForm("slow", speechClip(t, 0))
	slow := uploadtest.Slow(t.Context(), addr, "/v1/voices", ct, body, 10*time.Millisecond)
	enginetest.WaitFor(t, func() bool { ents, _ := os.ReadDir(uploads); return len(ents) == 1 })
	if r := cloneOn(t, addr, "anna", speechClip(t, 0)); r.ID != "anna" {
		t.Fatalf("the normal clone: %+v", r)
	}
	r := <-slow
	if r.Status != http.StatusRequestTimeout || !strings.Contains(r.Body, "--upload-timeout") {
		t.Fatalf("the slow upload: %d %s %v, want a 408 naming --upload-timeout", r.Status, r.Body, r.Err)
	}
	enginetest.WaitFor(t, func() bool { ents, _ := os.ReadDir(uploads); return len(ents) == 0 })
}

// encodingFake is a fake engine whose encoder is clonetest's, which
// encodes real clips as the codec would shape them.
type encodingFake struct {
	*enginetest.Fake
	enc *clonetest.Encoder
}

func (e encodingFake) Encode(ctx context.Context, req engine.EncodeRequest, progress func(engine.EncodeProgress)) ([]engine.EncodedClip, error) {
	return e.enc.Encode(ctx, req, progress)
}
