package hub

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/drama-tts/drama/pins"
)

// installOf is an install of the pins file it writes (files without
// digests when bare) into a fresh root, through f.
func installOf(t *testing.T, fx *fixture, f *Fetcher, pf []pins.File, bare bool) *Install {
	t.Helper()
	files := slices.Clone(pf)
	if bare {
		for i := range files {
			files[i] = pins.File{Path: files[i].Path}
		}
	}
	p := &pins.Pins{Format: pins.Format, Variant: "t", Repo: repoA, Revision: commitA, License: "test licence", Files: files}
	data, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(fx.dir, "pins.json")
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return &Install{Fetcher: *f, Root: filepath.Join(fx.dir, "root"), Variant: "t", Endpoint: fx.ts.URL,
		Pins: pins.LoadOptions{File: name, For: pins.ForFetch}}
}

// TestInstallPutsTheVariantInTheRoot: one call takes pins without digests
// to verified files in <root>/<variant>: completed from the listing, each
// step told in order, the files placed, this root's ref in the cache, the
// lock file (complete) and where the files came from.
func TestInstallPutsTheVariantInTheRoot(t *testing.T) {
	fx := newFixture(t)
	files := threeFiles()
	pf, f := fx.setup(files)
	in := installOf(t, fx, f, pf, true)
	var steps []Step
	var accepted string
	in.Accept = func(p *pins.Pins) error { accepted = p.License; return nil }
	in.Begin = func(s Step, p *pins.Pins) { steps = append(steps, s) }
	res, err := in.Run(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if want := []Step{StepListing, StepFetch, StepPlace}; !slices.Equal(steps, want) || accepted != "test licence" {
		t.Errorf("steps %v (want %v), licence asked %q", steps, want, accepted)
	}
	dir := filepath.Join(in.Root, "t")
	if res.Dir != dir || !res.Pins.Complete() {
		t.Errorf("dir %s, pins complete %v", res.Dir, res.Pins.Complete())
	}
	for p, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s in the root: %v", p, err)
		}
	}
	lock, err := pins.ReadFile(filepath.Join(dir, pins.LockFileName))
	if err != nil || !lock.Complete() || lock.Revision != commitA {
		t.Errorf("lock file: %v", err)
	}
	if ref, err := os.ReadFile(filepath.Join(f.Cache.RepoDir(repoA), "refs", filepath.FromSlash(RootRef(in.Root)))); err != nil || string(ref) != commitA {
		t.Errorf("root's ref: %q, %v", ref, err)
	}
	if Source(dir) != fx.ts.URL {
		t.Errorf("source record %q, want %s", Source(dir), fx.ts.URL)
	}
}

// TestInstallStepErrors: each refusal names its step and keeps its cause:
// a licence refused ends the install before the Hub is asked, pins without
// digests offline are an *OfflineError (pins.ErrIncomplete), a pins file
// that does not parse wraps pins.ErrInvalid.
func TestInstallStepErrors(t *testing.T) {
	fx := newFixture(t)
	pf, f := fx.setup(threeFiles())
	refused := errors.New("licence not accepted")

	in := installOf(t, fx, f, pf, true)
	in.Accept = func(*pins.Pins) error { return refused }
	_, err := in.Run(ctxT(t))
	var ie *InstallError
	if !errors.As(err, &ie) || ie.Step != StepAccept || !errors.Is(err, refused) || fx.srv.Stats().APIRequests != 0 {
		t.Errorf("refused licence: %v (API requests %d)", err, fx.srv.Stats().APIRequests)
	}

	in = installOf(t, fx, f, pf, true)
	in.Offline = true
	_, err = in.Run(ctxT(t))
	var oe *OfflineError
	if !errors.As(err, &ie) || ie.Step != StepListing || !errors.As(err, &oe) || !errors.Is(err, pins.ErrIncomplete) ||
		err.Error() != "the t pins have no digests yet and HF_HUB_OFFLINE is set" {
		t.Errorf("offline: %v", err)
	}

	in = installOf(t, fx, f, pf, false)
	if err := os.WriteFile(in.Pins.File, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = in.Run(ctxT(t))
	if !errors.As(err, &ie) || ie.Step != StepPins || !errors.Is(err, pins.ErrInvalid) {
		t.Errorf("bad pins file: %v", err)
	}
}
