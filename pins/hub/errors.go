package hub

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/drama-tts/drama/internal/atomicfile"
)

// Sentinel errors; every error of this package that fits one wraps it.
var (
	ErrUnauthorized = errors.New("unauthorized")           // 401
	ErrGated        = errors.New("gated repository")       // 403 GatedRepo, or 403 from the endpoint
	ErrNotFound     = errors.New("not found")              // 404
	ErrOffline      = errors.New("offline mode")           // HF_HUB_OFFLINE and a file is missing
	ErrNotHub       = errors.New("not a Hugging Face hub") // no X-Repo-Commit
	ErrMismatch     = errors.New("mismatch")               // size, digest or commit differ from the pin
	ErrBadResponse  = errors.New("bad response")           // a 200 for a range, a wrong Content-Range, a short body
	ErrExpired      = errors.New("download URL expired")   // 403 from the signed data URL
	ErrNoSpace      = atomicfile.ErrNoSpace
	ErrFlockHeld    = errors.New("flock held by another process") // Flock waited in vain
)

// StatusError is an HTTP answer the client could not use.
type StatusError struct {
	Method  string
	URL     string // without its query, which may carry a signature
	Status  int
	Code    string // X-Error-Code
	Message string // X-Error-Message
	Repo    string
	// TokenSource says where the token came from ("HF_TOKEN", a file), or
	// "" when none was sent.
	TokenSource string
	RetryAfter  time.Duration
	// Data marks a ranged GET of file bytes (a 403 there is an expired
	// signed URL, not a refusal of the repository).
	Data bool
}

// Error gives the request, the status, the Hub's own code and message,
// and what to do next.
func (e *StatusError) Error() string {
	msg := fmt.Sprintf("hub: %s %s: %d %s", e.Method, e.URL, e.Status, http.StatusText(e.Status))
	if e.Code != "" {
		msg += " (" + e.Code + ")"
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg + e.advice()
}

// advice says what to do next for the statuses a user can act on.
func (e *StatusError) advice() string {
	tok := "no token was sent; set HF_TOKEN to a token with read access"
	if e.TokenSource != "" {
		tok = "the token from " + e.TokenSource + " was refused or lacks read access"
	}
	switch errors.Unwrap(e) {
	case ErrUnauthorized:
		return "; the repository is private, gated or missing, or " + tok
	case ErrGated:
		return fmt.Sprintf("; %s is gated: accept its terms at %s/%s while logged in, then set HF_TOKEN to a token of that account (%s)", e.Repo, e.site(), e.Repo, tok)
	case ErrNotFound:
		return "; check the repository, the pinned revision and the endpoint"
	}
	return ""
}

// site is the scheme and host the refused request went to: the Hub, or
// the mirror or private hub --endpoint names.
func (e *StatusError) site() string {
	if u, err := url.Parse(e.URL); err == nil && u.Host != "" {
		return u.Scheme + "://" + u.Host
	}
	return DefaultEndpoint
}

// Unwrap maps the status to a sentinel.
func (e *StatusError) Unwrap() error {
	switch {
	case e.Status == http.StatusUnauthorized:
		return ErrUnauthorized
	case e.Status == http.StatusForbidden && e.Code == "GatedRepo":
		return ErrGated
	case e.Status == http.StatusForbidden && e.Data && e.Code != "GatedRepo":
		return ErrExpired
	case e.Status == http.StatusForbidden:
		return ErrGated
	case e.Status == http.StatusNotFound:
		return ErrNotFound
	}
	return nil
}

// retryable reports whether a status is worth another try.
func retryable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// redact drops the query (signatures) from a URL for messages.
func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(bad URL)"
	}
	p.RawQuery, p.User = "", nil
	return p.String()
}

// wrapped is err after what it happened to, with err's own "hub: "
// dropped so that a message names the package once.
type wrapped struct {
	what string
	err  error
}

// Error gives what, then err.
func (e *wrapped) Error() string { return e.what + ": " + strings.TrimPrefix(e.err.Error(), "hub: ") }

// Unwrap gives err.
func (e *wrapped) Unwrap() error { return e.err }

// wrap puts what (a format and its arguments) before err.
func wrap(err error, format string, args ...any) error {
	return &wrapped{what: fmt.Sprintf(format, args...), err: err}
}
