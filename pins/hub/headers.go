package hub

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ContentRange is a parsed "Content-Range: bytes first-last/size" header.
type ContentRange struct {
	First, Last, Size int64 // inclusive byte positions; Size -1 when "*"
}

// ParseContentRange parses a byte Content-Range header of a 206 response.
func ParseContentRange(h string) (ContentRange, error) {
	bad := func(why string) (ContentRange, error) {
		return ContentRange{}, fmt.Errorf("%w: Content-Range %q: %s", ErrBadResponse, h, why)
	}
	spec, ok := strings.CutPrefix(h, "bytes ")
	if !ok {
		return bad("want unit bytes")
	}
	rng, total, ok := strings.Cut(spec, "/")
	if !ok {
		return bad("no '/'")
	}
	a, b, ok := strings.Cut(rng, "-")
	if !ok {
		return bad("no '-'")
	}
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || first < 0 || last < first {
		return bad("bad positions")
	}
	size := int64(-1)
	if total != "*" {
		var err error
		if size, err = strconv.ParseInt(total, 10, 64); err != nil || size <= last {
			return bad("bad total")
		}
	}
	return ContentRange{first, last, size}, nil
}

// MaxRetryDelay caps the wait a server may ask for.
const MaxRetryDelay = 5 * time.Minute

// RetryDelay reads how long a 429 or 503 asks the client to wait: the t=
// parameter of an IETF RateLimit header (as the Hub sends), else
// Retry-After in seconds, at most MaxRetryDelay. ok is false when neither
// is present.
func RetryDelay(rateLimit, retryAfter string) (d time.Duration, ok bool) {
	for _, part := range strings.Split(rateLimit, ";") {
		if v, found := strings.CutPrefix(strings.TrimSpace(part), "t="); found {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
				return secondsCapped(n), true
			}
		}
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(retryAfter), 10, 64); err == nil && n >= 0 {
		return secondsCapped(n), true
	}
	return 0, false
}

func secondsCapped(n int64) time.Duration {
	if n >= int64(MaxRetryDelay/time.Second) {
		return MaxRetryDelay
	}
	return time.Duration(n) * time.Second
}

// NextLink returns the URL of a GitHub-style Link header's rel="next"
// entry, or "" when there is none.
func NextLink(h string) string {
	for _, part := range strings.Split(h, ",") {
		target, params, ok := strings.Cut(part, ";")
		if !ok {
			continue
		}
		target = strings.TrimSpace(target)
		if !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
			continue
		}
		for _, p := range strings.Split(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(k, "rel") && strings.Trim(v, `"`) == "next" {
				return target[1 : len(target)-1]
			}
		}
	}
	return ""
}

// NormalizeETag strips a weak prefix and quotes from an ETag.
func NormalizeETag(s string) string {
	return strings.Trim(strings.TrimPrefix(strings.TrimSpace(s), "W/"), `"`)
}
