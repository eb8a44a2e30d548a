package hub

import (
	"errors"
	"strings"
	"testing"

	"github.com/drama-tts/drama/pins"
)

func TestCompleteFromListing(t *testing.T) {
	fx := newFixture(t)
	files := threeFiles()
	want := fx.addRepo(repoA, commitA, files)
	fx.srv.PageSize = 1 // every entry on its own page: Link pagination
	c := fx.client()
	p := &pins.Pins{Format: pins.Format, Variant: "t", Repo: repoA, Revision: commitA}
	q, err := c.Complete(ctxT(t), p)
	if err != nil {
		t.Fatal(err)
	}
	if !q.Complete() || len(q.Files) != len(want) {
		t.Fatalf("want %d complete files, got %+v", len(want), q.Files)
	}
	for i, f := range q.Files {
		if f != want[i] {
			t.Errorf("%s: want %+v, got %+v", f.Path, want[i], f)
		}
	}
	if len(p.Files) != 0 {
		t.Error("Complete changed its argument")
	}
}

func TestCompleteRefuses(t *testing.T) {
	fx := newFixture(t)
	want := fx.addRepo(repoA, commitA, threeFiles())
	c := fx.client()
	base := pins.Pins{Format: pins.Format, Variant: "t", Repo: repoA, Revision: commitA}

	branch := base
	branch.Revision = "main"
	if _, err := c.Complete(ctxT(t), &branch); err == nil || !strings.Contains(err.Error(), "40-hex") {
		t.Errorf("branch revision: want a refusal, got %v", err)
	}
	missing := base
	missing.Files = []pins.File{{Path: "nope.bin"}}
	if _, err := c.Complete(ctxT(t), &missing); !errors.Is(err, ErrNotFound) {
		t.Errorf("unlisted file: want ErrNotFound, got %v", err)
	}
	wrong := base
	wrong.Files = []pins.File{{Path: want[0].Path, Size: want[0].Size + 1}}
	if _, err := c.Complete(ctxT(t), &wrong); !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "pinned") {
		t.Errorf("size disagreement: want ErrMismatch, got %v", err)
	}
	other := base
	other.Revision = commitB
	if _, err := c.Complete(ctxT(t), &other); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown commit: want ErrNotFound, got %v", err)
	}
	totals := base
	totals.ExpectedFiles = len(want) + 1
	if _, err := c.Complete(ctxT(t), &totals); !errors.Is(err, ErrMismatch) || !errors.Is(err, pins.ErrInvalid) || !strings.Contains(err.Error(), "pinned totals") {
		t.Errorf("totals disagreement: want ErrMismatch and pins.ErrInvalid, got %v", err)
	}
}

// TestCompleteErrorsNameNoCommand: Complete's errors are the package's,
// prefixed hub:, and leave the advice (which command to run) to the
// command that called it.
func TestCompleteErrorsNameNoCommand(t *testing.T) {
	fx := newFixture(t)
	want := fx.addRepo(repoA, commitA, threeFiles())
	c := fx.client()
	base := pins.Pins{Format: pins.Format, Variant: "t", Repo: repoA, Revision: commitA}
	branch, missing, wrong := base, base, base
	branch.Revision = "main"
	missing.Files = []pins.File{{Path: "nope.bin"}}
	wrong.Files = []pins.File{{Path: want[0].Path, Size: want[0].Size + 1}}
	for _, p := range []pins.Pins{branch, missing, wrong} {
		_, err := c.Complete(ctxT(t), &p)
		if err == nil || !strings.HasPrefix(err.Error(), "hub: ") || strings.Contains(err.Error(), "pins lock") || strings.Contains(err.Error(), "drama ") {
			t.Errorf("%s@%s %v: want an error prefixed hub: naming no command, got %v", p.Repo, p.Revision, p.Files, err)
		}
	}
}
