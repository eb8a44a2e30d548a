package serve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/voices"
)

// writeClone saves a small valid cloned voice as the clone pipeline does.
func writeClone(t *testing.T, dir, id string) {
	t.Helper()
	codes := make(voices.Codes, voices.NumCodebooks)
	for c := range codes {
		codes[c] = []int{c, c + 1, c + 2}
	}
	v := &voices.Voice{Format: voices.FormatCloned, ID: id, Name: id, Source: voices.SourceSynthetic,
		Created:    time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC),
		References: []voices.Reference{{Text: "Hello there, " + id + ".", Samples: 3 * voices.SamplesPerFrame, Codes: codes}}}
	data, err := voices.Marshal(v, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, id+".json"), data, v.FileMode()); err != nil {
		t.Fatal(err)
	}
}

// catalogEngine is a fake engine that says it serves a catalog.
type catalogEngine struct{ *enginetest.Fake }

func (c catalogEngine) Describe(ctx context.Context) (engine.Description, error) {
	d, err := c.Fake.Describe(ctx)
	d.Capabilities.VoiceCatalog, d.Capabilities.References = true, false
	return d, err
}

// TestCatalogKeepsTheMostRecentlySpoken: of 20 clones, every catalog
// written holds the operator's voices and the 16 spoken most recently, in
// the catalog's format under their content names, and the order survives a
// new store (a new run of drama serve).
func TestCatalogKeepsTheMostRecentlySpoken(t *testing.T) {
	root := t.TempDir()
	voicesDir, own, catDir := filepath.Join(root, "voices"), t.TempDir(), filepath.Join(root, ".drama", "catalog")
	os.MkdirAll(voicesDir, 0o700)
	os.WriteFile(filepath.Join(own, "narrator.json"), []byte(`{"format":"drama3-http-voice/1","id":"narrator"}`), 0o600)
	store := newCatalogStore(newVoiceStore(voicesDir, nil, engine.Install{}, nil), catDir, own)
	ctx := context.Background()
	var ids []string
	for i := range 20 {
		id := fmt.Sprintf("v%02d", i)
		writeClone(t, voicesDir, id)
		ids = append(ids, id)
	}
	for _, id := range ids { // v19 is spoken last
		if _, _, err := store.Spoken(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.Publish(ctx, "v02"); err != nil { // v02 is the newest now
		t.Fatal(err)
	}
	req, err := store.prepare(ctx, catalogEngine{enginetest.NewFake()}, engine.StartRequest{VoicesDir: own})
	if err != nil || req.VoicesDir != catDir {
		t.Fatalf("prepare: %v, voices dir %q", err, req.VoicesDir)
	}
	want := map[string]bool{"narrator": true}
	for _, id := range append([]string{"v02"}, ids[5:]...) { // v02 and v05..v19
		name, live, err := store.Spoken(ctx, id)
		if err != nil || !live {
			t.Fatalf("%s: live %v, %v", id, live, err)
		}
		want[name] = true
	}
	for _, id := range []string{"v00", "v01", "v03", "v04"} {
		if name, live, _ := store.Spoken(ctx, id); live {
			t.Fatalf("%s (%s) is in the catalog: it was spoken before the 16 newest", id, name)
		}
	}
	names, _ := filepath.Glob(filepath.Join(catDir, "*.json"))
	got := map[string]bool{}
	for _, n := range names {
		id := filepath.Base(n[:len(n)-len(".json")])
		got[id] = true
		if id == "narrator" {
			continue
		}
		v, err := voices.ReadFile(n, nil)
		if err != nil || v.Format != voices.FormatMetal || v.ID != id {
			t.Fatalf("catalog file %s: %+v %v", n, v, err)
		}
	}
	if len(got) != 17 || len(got) != len(want) {
		t.Fatalf("catalog holds %v, want %v", keys(got), keys(want))
	}
	for k := range want {
		if !got[k] {
			t.Fatalf("catalog holds %v, want %v", keys(got), keys(want))
		}
	}
	// a new run reads the order back
	again := newCatalogStore(newVoiceStore(voicesDir, nil, engine.Install{}, nil), catDir, own)
	if len(again.order) != 20 || again.order[0] != "v04" {
		t.Fatalf("order after a restart: %v", again.order)
	}
	// the order is this host's: kept beside its catalog, not in the
	// voices directory other hosts may share
	if _, err := os.Stat(filepath.Join(voicesDir, spokenFile)); err == nil {
		t.Errorf("%s written in the voices directory, which other hosts may share", spokenFile)
	}
	if _, err := os.Stat(filepath.Join(root, ".drama", spokenFile)); err != nil {
		t.Errorf("the order of the spoken clones: %v", err)
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
