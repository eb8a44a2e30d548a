package encodecmd

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/clone"
	"github.com/drama-tts/drama/engine/clone/clonetest"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/engine/httpapi/httpapitest"
	"github.com/drama-tts/drama/voices"
)

// cloneStore is a VoiceStore over package clone, as drama serve's.
type cloneStore struct {
	httpapi.VoiceStore
	eng engine.Engine
	dir string
}

func (s cloneStore) Clone(ctx context.Context, req httpapi.CloneRequest) (httpapi.VoiceInfo, error) {
	clips := make([]clone.Clip, len(req.Clips))
	for i, c := range req.Clips {
		clips[i] = clone.Clip{Name: c.Filename, Transcript: c.Transcript, Path: c.Path, Data: c.Data}
	}
	res, _, err := clone.Clone(ctx, s.eng, clips, clone.Consent{Source: voices.SourceKind(req.Source), Who: req.ConsentWho, Statement: req.ConsentStatement},
		clone.Options{ID: req.ID, Name: req.Name, Output: filepath.Join(s.dir, req.ID+".json")})
	var xe *clone.ExistsError
	if errors.As(err, &xe) {
		return httpapi.VoiceInfo{}, engine.Invalidf("%v", err)
	}
	if err != nil {
		return httpapi.VoiceInfo{}, err
	}
	v := res.Voice
	return httpapi.VoiceInfo{ID: v.ID, Name: v.Name, Origin: "clone", Source: string(v.Source), References: len(v.References),
		Frames: v.References[0].Codes.Frames()}, nil
}

func TestEncodeThroughHTTPAPIServer(t *testing.T) {
	eng := &testEngine{Fake: enginetest.NewFake(), Encoder: &clonetest.Encoder{}}
	dir := t.TempDir()
	srv := httptest.NewServer(httpapitest.Over(t, eng, httpapi.Config{Voices: cloneStore{eng: eng, dir: dir}}).Handler())
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
