// Package hubaccess is the Hub as commands reach it: the client and cache
// made from the user's flags and environment, the check of --endpoint, the
// advice a Hub that does not answer needs, and the licence of the weights
// accepted before a download. drama fetch, drama pins lock and drama up use
// it.
package hubaccess

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub"
)

// Hub is what a command learns from flags and the environment to reach
// the Hub and its cache.
type Hub struct {
	Root    string // absolute
	Cache   hub.Cache
	Client  *hub.Client
	Offline bool // HF_HUB_OFFLINE
	// Endpoint and EndpointFrom (--endpoint, HF_ENDPOINT or the default)
	// name the Hub for messages.
	Endpoint, EndpointFrom string
}

// NewHub reads the root, the cache (the root's own with noCache), the
// endpoint (--endpoint, else HF_ENDPOINT, else the Hub) and the token, and
// makes a client for workers parallel streams. Each retry of a HEAD or API
// call gets one line until a command's reporter takes them over.
func NewHub(f *cmdutil.Factory, endpoint string, workers int, noCache bool) (*Hub, error) {
	root, err := f.Root()
	if err != nil {
		return nil, err
	}
	// Links name absolute paths: a relative --root would make every link
	// in it relative to the wrong folder.
	if root, err = filepath.Abs(root); err != nil {
		return nil, err
	}
	h := &Hub{Root: root, Offline: hub.Offline(f.Getenv)}
	h.Cache = hub.CacheFromEnv(f.Getenv)
	if noCache {
		h.Cache = hub.Cache{Dir: filepath.Join(root, pins.StateDirName, "hub")}
	}
	from := "--endpoint"
	if endpoint == "" {
		endpoint, from = hub.Endpoint(f.Getenv), "HF_ENDPOINT"
		if f.Getenv("HF_ENDPOINT") == "" {
			from = "the default, as neither --endpoint nor HF_ENDPOINT is set"
		}
	}
	h.Endpoint, h.EndpointFrom = strings.TrimRight(endpoint, "/"), from
	token, source := hub.TokenFromEnv(f.Getenv)
	h.Client = hub.New(endpoint, token, workers)
	h.Client.TokenSource = source
	h.Client.OnRetry = func(r hub.Retry) { f.Infof("retry: %s: %s", r.What, r.Message()) }
	h.Client.UserAgent = "drama/" + f.Version
	return h, nil
}

// VariantDir is where a variant's files go: <root>/<variant>, the folder
// drama verify checks for the same pins.
func (h *Hub) VariantDir(p *pins.Pins) string { return filepath.Join(h.Root, p.Variant) }

// Complete fills p's sizes and digests from the Hub's listing of its
// commit. A listing that disagrees with the pins is a mismatch (exit 3); a
// Hub that cannot be reached or lacks the commit gets Advice, repeating
// cmdline (the cache cannot stand in for a listing).
func (h *Hub) Complete(ctx context.Context, p *pins.Pins, cmdline string) (*pins.Pins, error) {
	q, err := h.Client.Complete(ctx, p)
	if err != nil {
		return nil, h.Advice(MismatchExit(err), cmdline, false)
	}
	return q, nil
}

// MismatchExit gives a mismatch with the Hub (hub.ErrMismatch) its exit
// code, 3.
func MismatchExit(err error) error {
	if errors.Is(err, hub.ErrMismatch) {
		return cmdutil.MismatchError(err)
	}
	return err
}

// NoArgs refuses arguments with a usage error (exit 2).
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return cmdutil.FlagErrorf("%s takes no arguments, got %q", cmd.CommandPath(), args)
	}
	return nil
}

// CheckEndpoint refuses a malformed --endpoint or HF_ENDPOINT at once, as
// a usage error naming where it came from.
func CheckEndpoint(f *cmdutil.Factory, flag string) error {
	if flag != "" {
		if err := hub.CheckEndpoint(flag); err != nil {
			return cmdutil.FlagErrorf("--endpoint: %v", err)
		}
		return nil
	}
	if v := strings.TrimRight(f.Getenv("HF_ENDPOINT"), "/"); v != "" {
		if err := hub.CheckEndpoint(v); err != nil {
			return cmdutil.FlagErrorf("HF_ENDPOINT: %v; fix it or pass --endpoint", err)
		}
	}
	return nil
}

// InstallAdvice adds to an error of hub.Install what to do, by its step:
// who holds a flock, a pins file's faults, offlineFix(variant) for pins
// without digests offline, and Advice for a Hub that does not answer, repeating
// cmdline (with HF_HUB_OFFLINE=1 where the cache can stand in: not for a
// listing). Other errors come back as they are.
func (h *Hub) InstallAdvice(err error, cmdline string, offlineFix func(variant string) string) error {
	var ie *hub.InstallError
	if !errors.As(err, &ie) {
		return err
	}
	err = ie.Err
	switch ie.Step {
	case hub.StepLock:
		return cmdutil.FlockAdvice(err, "another drama fetch or drama rm of this root", "--lock-wait")
	case hub.StepPins:
		return cmdutil.PinsLoadError(err)
	case hub.StepListing:
		var oe *hub.OfflineError
		if errors.As(err, &oe) {
			return fmt.Errorf("%w: %s", err, offlineFix(oe.Variant))
		}
		return h.Advice(MismatchExit(err), cmdline, false)
	case hub.StepFetch:
		err = cmdutil.FlockAdvice(err, "another download of the same repository to this cache (drama fetch, drama rm or huggingface_hub)", "--lock-wait")
		return h.Advice(MismatchExit(err), cmdline, true)
	}
	return err
}

// Advice turns a server that could not be reached into what to do:
// check the address (naming where it came from), or, with cacheAlone (the
// command can do without the Hub), work from the cache alone; both repeat
// the user's own command. A repository, commit or file the Hub does not
// have, or an answer past drama's caps, gets where its address came from.
// Other errors come back as they are.
func (h *Hub) Advice(err error, cmdline string, cacheAlone bool) error {
	var ne *hub.NetError
	if !errors.As(err, &ne) {
		if errors.Is(err, hub.ErrNotFound) {
			return &advised{err: err, msg: fmt.Sprintf("%v (the Hub address %s comes from %s; --endpoint or HF_ENDPOINT names another)", err, h.Endpoint, h.EndpointFrom)}
		}
		if errors.Is(err, hub.ErrTooLarge) {
			return &advised{err: err, msg: fmt.Sprintf("%v\n  the Hub address %s comes from %s: point --endpoint (or HF_ENDPOINT) at the Hub or a mirror you trust", err, h.Endpoint, h.EndpointFrom)}
		}
		return err
	}
	if cmdline == "" {
		cmdline = "drama fetch"
	}
	msg := fmt.Sprintf("%v\n  the Hub address %s comes from %s: check it, or point --endpoint (or HF_ENDPOINT) at a Hub or mirror that answers, then run again:\n    %s",
		ne, h.Endpoint, h.EndpointFrom, cmdline)
	if cacheAlone {
		msg += "\n  to use only what is already in the cache:\n    HF_HUB_OFFLINE=1 " + cmdline
	}
	return &advised{err: err, msg: msg}
}

// advised is a Hub error with what to do; it unwraps to the original
// error chain.
type advised struct {
	err error
	msg string
}

func (u *advised) Error() string { return u.msg }
func (u *advised) Unwrap() error { return u.err }
