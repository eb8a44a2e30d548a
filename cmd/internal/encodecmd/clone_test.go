package encodecmd

import (
	"context"
	"encoding/binary"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/voices"
)

func cloneRequest(t *testing.T) httpapi.CloneRequest {
	data, err := os.ReadFile(shortClip(t))
	if err != nil {
		t.Fatal(err)
	}
	return httpapi.CloneRequest{Name: "Anna Example", Source: "consented", ConsentWho: "Anna Example", ConsentStatement: statement,
		Clips: []httpapi.CloneClip{{Filename: "take1.wav", Data: data, Transcript: sentence}}}
}

func TestClone(t *testing.T) {
	eng := &testEngine{Fake: enginetest.NewFake()}
	dir := t.TempDir()
	install := engine.Install{ModelDir: "/models/full"}
	v, err := Clone(context.Background(), eng, install, dir, cloneRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err := voices.ReadFile(filepath.Join(dir, "anna-example.json"), nil)
	if err != nil || got.ID != v.ID || got.Consent == nil || got.Consent.Statement != statement || len(got.References) != 1 {
		t.Fatalf("%v %+v", err, got)
	}
	if eng.gotReq.Install.ModelDir != "/models/full" {
		t.Fatalf("install not passed: %+v", eng.gotReq.Install)
	}
	// the same id again
	if _, err := Clone(context.Background(), eng, install, dir, cloneRequest(t)); !engine.IsInvalid(err) || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("want an invalid request for an existing voice, got %v", err)
	}
}

func TestCloneRefusals(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*httpapi.CloneRequest)
		spoil   func(*engine.EncodedClip)
		invalid bool
		want    string
	}{
		{"no consent", func(r *httpapi.CloneRequest) { r.ConsentStatement = "" }, nil, true, "no consent, no clone"},
		{"no clips", func(r *httpapi.CloneRequest) { r.Clips = nil }, nil, true, "no clips"},
		{"bad transcript", func(r *httpapi.CloneRequest) { r.Clips[0].Transcript = "a\nb" }, nil, true, "transcript not allowed"},
		{"bad transcript, no file name", func(r *httpapi.CloneRequest) { r.Clips[0].Filename, r.Clips[0].Transcript = "", "a\nb" }, nil, true, "clip 1: transcript not allowed"},
		{"not audio", func(r *httpapi.CloneRequest) { r.Clips[0].Data = []byte("RIFF\x00\x00\x00\x00WAVEjunk") }, nil, true, "take1.wav"},
		{"silence", func(r *httpapi.CloneRequest) {
			r.Clips[0].Data = append(r.Clips[0].Data[:44:44], make([]byte, len(r.Clips[0].Data)-44)...)
		}, nil, true, "no_speech"},
		{"bad codes", nil, func(c *engine.EncodedClip) { c.Codes[1][0] = 5000 }, false, "want a code in 0..1023, got 5000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := cloneRequest(t)
			if tt.edit != nil {
				tt.edit(&req)
			}
			eng := &testEngine{Fake: enginetest.NewFake(), spoil: tt.spoil}
			dir := t.TempDir()
			_, err := Clone(context.Background(), eng, engine.Install{}, dir, req)
			k, _ := engine.KindOf(err)
			if (k == engine.KindInvalid) != tt.invalid || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want invalid=%v with %q, got %v (kind %v)", tt.invalid, tt.want, err, k)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Fatalf("nothing may be written: %v", ents)
			}
		})
	}
}

// cloneStore is the VoiceStore a drama serve would use, over Clone.
type cloneStore struct {
	httpapi.VoiceStore
	eng engine.Engine
	dir string
}

func (s cloneStore) Clone(ctx context.Context, req httpapi.CloneRequest) (httpapi.VoiceInfo, error) {
	v, err := Clone(ctx, s.eng, engine.Install{}, s.dir, req)
	if err != nil {
		return httpapi.VoiceInfo{}, err
	}
	return httpapi.VoiceInfo{ID: v.ID, Name: v.Name, Origin: "clone", Source: string(v.Source), References: len(v.References),
		Frames: v.References[0].Codes.Frames()}, nil
}

func TestEncodeThroughHTTPAPIServer(t *testing.T) {
	eng := &testEngine{Fake: enginetest.NewFake()}
	dir := t.TempDir()
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Engine: eng, Voices: cloneStore{eng: eng, dir: dir}}).Handler())
	defer srv.Close()
	e := newEnv(t)
	e.opts.Clips, e.opts.Server = []string{shortClip(t) + ":" + sentence}, srv.URL
	if err := run(context.Background(), e.opts); err != nil {
		t.Fatal(err)
	}
	v, err := voices.ReadFile(filepath.Join(dir, "anna-example.json"), nil)
	if err != nil || v.Consent.Who != "Anna Example" || v.References[0].Text != sentence {
		t.Fatalf("%v %+v", err, v)
	}
	if !strings.HasPrefix(e.out.String(), "anna-example\tAnna Example\tconsented\t1\t") {
		t.Fatalf("stdout %q", e.out.String())
	}
	// the second time the server refuses: the voice exists
	err = run(context.Background(), e.opts)
	if cmdutil.ExitCode(err) != cmdutil.ExitEngine || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("want exit 4 with the server's words, got %v", err)
	}
	var ee *cmdutil.ExitError
	if !errors.As(err, &ee) {
		t.Fatal("want an exit error")
	}
}

// TestCloneRefusesALongClipUndecoded: a clip uploaded to a file that is
// 49 minutes long is refused from its header; the message names the clip
// as the client sent it, not the server's file.
func TestCloneRefusesALongClipUndecoded(t *testing.T) {
	const secs = 49 * 60
	n := secs * 8000
	b := make([]byte, 44+2*n)
	copy(b, "RIFF")
	binary.LittleEndian.PutUint32(b[4:], uint32(36+2*n))
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)
	binary.LittleEndian.PutUint16(b[20:], 1)
	binary.LittleEndian.PutUint16(b[22:], 1)
	binary.LittleEndian.PutUint32(b[24:], 8000)
	binary.LittleEndian.PutUint32(b[28:], 16000)
	binary.LittleEndian.PutUint16(b[32:], 2)
	binary.LittleEndian.PutUint16(b[34:], 16)
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], uint32(2*n))
	path := filepath.Join(t.TempDir(), "clip-4711")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	req := cloneRequest(t)
	req.Clips[0].Data, req.Clips[0].Path = nil, path
	var err error
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = Clone(context.Background(), &testEngine{Fake: enginetest.NewFake()}, engine.Install{}, t.TempDir(), req)
	runtime.ReadMemStats(&after)
	if !engine.IsInvalid(err) || !strings.Contains(err.Error(), "clip 1 (take1.wav)") || !strings.Contains(err.Error(), "2940.0 s long") || strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want an invalid request naming clip 1 (take1.wav) and its length, not %s", err, path)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
		t.Fatalf("refusing the clip allocated %d bytes: it was decoded (the file is 47 MB)", n)
	}
}
