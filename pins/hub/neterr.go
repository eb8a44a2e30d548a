package hub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrUnreachable marks a request that never got an HTTP answer (refused,
// no such host, timed out) after all its attempts.
var ErrUnreachable = errors.New("cannot reach the server")

// NetError is a request that got no HTTP answer after all its attempts.
type NetError struct {
	Host     string        // scheme and host it went to, e.g. http://127.0.0.1:8080
	What     string        // what was asked, e.g. "HEAD config.json"
	Attempts int           // tries made
	Waited   time.Duration // time spent between them
	Err      error         // the last failure
}

// Error names the server, the reason and how long was tried.
func (e *NetError) Error() string {
	return fmt.Sprintf("cannot reach %s: %s (%d attempts over %s, for %s)",
		e.Host, netReason(e.Err), e.Attempts, e.Waited.Round(100*time.Millisecond), e.What)
}

// Unwrap gives ErrUnreachable and the last failure.
func (e *NetError) Unwrap() []error { return []error{ErrUnreachable, e.Err} }

// Retry is one retry about to happen, for messages.
type Retry struct {
	What    string        // what is retried, e.g. "HEAD config.json"
	N, Of   int           // this is retry N of at most Of
	Delay   time.Duration // the wait before it
	Err     error         // what failed
	Network bool          // no HTTP answer at all (refused, DNS, timeout)
}

// Message is the retry's one line, such as
// "retrying in 4s (3 of 5): connection refused".
func (r Retry) Message() string {
	return fmt.Sprintf("retrying in %s (%d of %d): %s", r.Delay.Round(100*time.Millisecond), r.N, r.Of, shortReason(r.Err))
}

// isNetwork reports whether err is a failure to get any HTTP answer.
func isNetwork(err error) bool {
	var se *StatusError
	if err == nil || errors.As(err, &se) || errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	var oe *net.OpError
	var de *net.DNSError
	return errors.As(err, &oe) || errors.As(err, &de) || (errors.As(err, &ne) && ne.Timeout()) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, context.DeadlineExceeded)
}

// netReason says in a few words why a request got no answer.
func netReason(err error) string {
	var de *net.DNSError
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &de):
		if de.IsNotFound {
			return "no such host " + de.Name
		}
		return "cannot resolve " + de.Name + ": " + de.Err
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EHOSTUNREACH):
		return "network unreachable"
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return "timed out"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// shortReason is netReason for network failures, else the status or the
// error itself.
func shortReason(err error) string {
	var se *StatusError
	if errors.As(err, &se) {
		return fmt.Sprintf("%d %s", se.Status, strings.ToLower(httpStatusText(se.Status)))
	}
	if isNetwork(err) {
		return netReason(err)
	}
	return err.Error()
}

// CheckEndpoint says whether s is a usable Hub address: an http or https
// URL with a host and nothing after the path.
func CheckEndpoint(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https"):
		msg := fmt.Sprintf("want an http:// or https:// URL such as https://huggingface.co or http://127.0.0.1:8080, got %q", s)
		if !strings.Contains(s, "://") {
			msg += fmt.Sprintf(" (did you mean http://%s?)", s)
		}
		return errors.New(msg)
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("no host in %q", s)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return fmt.Errorf("want a plain address with no query, fragment or user, got %q", s)
	}
	if p := u.Port(); p != "" {
		if _, err := net.LookupPort("tcp", p); err != nil {
			return fmt.Errorf("bad port in %q", s)
		}
	}
	return nil
}

// origin is the scheme and host of u.
func origin(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return redact(u)
	}
	return p.Scheme + "://" + p.Host
}

// isDial reports whether err is a failure to connect at all (refused, no
// such host, unreachable), as opposed to a connection that broke.
func isDial(err error) bool {
	var oe *net.OpError
	var de *net.DNSError
	return errors.As(err, &de) || (errors.As(err, &oe) && oe.Op == "dial")
}
