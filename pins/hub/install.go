package hub

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/drama-tts/drama/pins"
)

// OfflineError is an install of pins without digests while the Hub may
// not be asked (HF_HUB_OFFLINE): they can be completed online only. It
// matches pins.ErrIncomplete.
type OfflineError struct{ Variant string }

// Error names the variant and HF_HUB_OFFLINE.
func (e *OfflineError) Error() string {
	return fmt.Sprintf("the %s pins have no digests yet and HF_HUB_OFFLINE is set", e.Variant)
}

// Is reports whether target is pins.ErrIncomplete.
func (e *OfflineError) Is(target error) bool { return target == pins.ErrIncomplete }

// Step names the step of an install an InstallError comes from.
type Step string

// The steps of an install, in their order.
const (
	StepLock    Step = "lock"    // the root's fetch flock
	StepPins    Step = "pins"    // loading the pins (pins.Load)
	StepAccept  Step = "accept"  // the licence (Install.Accept)
	StepListing Step = "listing" // completing the pins from the Hub's listing
	StepFetch   Step = "fetch"   // the files into the cache (Fetcher.Fetch)
	StepPlace   Step = "place"   // the files into the root, its ref and its lock file
)

// InstallError is an error of one step of an install; its text is that of
// the error itself, and it unwraps to it.
type InstallError struct {
	Step Step
	Err  error
}

// Error is the step's error's own text.
func (e *InstallError) Error() string { return e.Err.Error() }

// Unwrap returns the step's error.
func (e *InstallError) Unwrap() error { return e.Err }

// Install is a variant's pinned files installed into a drama root, as
// drama fetch and drama up make it: the root's flock taken, the pins
// loaded, their licence accepted, pins without digests completed from the
// Hub's listing, the files fetched into the cache verified, placed in
// <root>/<variant>, this root's ref written in the cache (drama rm in
// another root then keeps the snapshot), the lock file written, and where
// the files came from recorded (Source). Its fields are settings; Run
// changes none.
type Install struct {
	Fetcher
	// Root is the drama root, absolute: the links it gets name absolute
	// paths.
	Root string
	// Variant and Pins say which pins (pins.Load).
	Variant string
	Pins    pins.LoadOptions
	// HardLinks places hard links to the blobs (plain files) rather than
	// symlinks into the cache's snapshot.
	HardLinks bool
	// Endpoint is the Hub's address, recorded for advice that fetches the
	// variant again.
	Endpoint string
	// Accept, when set, is asked before anything is read from the Hub
	// whether the pins' licence is accepted; its error ends the install.
	Accept func(*pins.Pins) error
	// Begin, when set, is told as a step begins, with the pins as they are
	// then: StepListing (only for pins without digests, before they are
	// completed from the Hub's listing of their commit), StepFetch (the
	// pins complete) and StepPlace.
	Begin func(Step, *pins.Pins)
	// Warn, when set, is told of what failed without failing the install
	// (the record of where the files came from).
	Warn func(error)
}

// Installed is what an install put in a root.
type Installed struct {
	*Result
	Pins *pins.Pins // complete: those of the lock file
	Dir  string     // <root>/<variant>
}

// Run makes the install. Its errors are *InstallError naming their step;
// a pins file that does not parse wraps pins.ErrInvalid, a listing or
// files that disagree with the pins ErrMismatch, a flock held past
// FlockWait ErrFlockHeld, and incomplete pins offline are an *OfflineError.
func (in *Install) Run(ctx context.Context) (*Installed, error) {
	fail := func(step Step, err error) (*Installed, error) { return nil, &InstallError{Step: step, Err: err} }
	release, err := FlockRoot(ctx, in.Root, in.flockWait())
	if err != nil {
		return fail(StepLock, err)
	}
	defer release()
	p, err := pins.Load(in.Root, in.Variant, in.Pins)
	if err != nil {
		return fail(StepPins, err)
	}
	if in.Accept != nil {
		if err := in.Accept(p); err != nil {
			return fail(StepAccept, err)
		}
	}
	if !p.Complete() {
		if in.Offline {
			return fail(StepListing, &OfflineError{Variant: p.Variant})
		}
		in.begin(StepListing, p)
		if p, err = in.Client.Complete(ctx, p); err != nil {
			return fail(StepListing, err)
		}
	}
	in.begin(StepFetch, p)
	res, err := in.Fetch(ctx, p.Repo, p.Revision, p.Files)
	if err != nil {
		return fail(StepFetch, err)
	}
	in.begin(StepPlace, p)
	dir := filepath.Join(in.Root, p.Variant)
	if err := res.Place(dir, in.HardLinks || in.Cache.NoSymlinks); err != nil {
		return fail(StepPlace, err)
	}
	if err := in.Cache.WriteRef(res.Repo, RootRef(in.Root), res.Commit); err != nil {
		return fail(StepPlace, fmt.Errorf("fetch: write ref: %w", err))
	}
	if err := p.WriteFile(filepath.Join(dir, pins.LockFileName)); err != nil {
		return fail(StepPlace, err)
	}
	if err := WriteSource(dir, in.Endpoint); err != nil && in.Warn != nil {
		in.Warn(fmt.Errorf("could not record where %s came from: %w", p.Variant, err))
	}
	return &Installed{Result: res, Pins: p, Dir: dir}, nil
}

func (in *Install) begin(s Step, p *pins.Pins) {
	if in.Begin != nil {
		in.Begin(s, p)
	}
}

// FlockRoot takes a root's fetch flock (<root>/.drama/fetch.lock), which an
// install and drama rm hold while they change the root, waiting up to wait.
func FlockRoot(ctx context.Context, root string, wait time.Duration) (release func(), err error) {
	return Flock(ctx, filepath.Join(root, pins.StateDirName, "fetch.lock"), wait)
}
