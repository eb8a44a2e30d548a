// Package httpsafe holds the redirect policy of every HTTP client drama
// has: a credential goes only to the origin it was set for. It imports the
// standard library alone, and every package may import it.
//
// Go's own policy drops Authorization on a redirect to another host name
// but keeps it for another port of the same host, for a subdomain and for
// a step down from https to http, and it forwards every other header
// (X-Api-Key among them) anywhere. CheckRedirect drops them all as soon as
// a redirect leaves the first request's origin: its scheme, host and port.
package httpsafe

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// MaxRedirects is how many redirects a client follows before it gives up,
// as Go's default policy does.
const MaxRedirects = 10

// credentialHeaders are the request headers that carry a credential: the
// Hub's token and drama serve's key (Authorization, X-Api-Key), and a
// cookie set by hand.
var credentialHeaders = []string{"Authorization", "X-Api-Key", "Cookie", "Cookie2"}

// CheckRedirect is the http.Client.CheckRedirect of every drama client.
// It follows up to MaxRedirects redirects, and removes the credential
// headers from the next request unless it and every hop before it share
// the first request's origin: scheme, host and port, a default port
// written or not. So a token is never sent to another host, another port
// of the same host, or from https to http, and once a redirect chain has
// left the origin it stays without the token even when it comes back.
// A same-origin redirect (the Hub's relative redirect of a renamed
// repository) keeps the headers.
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= MaxRedirects {
		return fmt.Errorf("stopped after %d redirects", MaxRedirects)
	}
	if len(via) == 0 {
		return nil
	}
	origin := Origin(via[0].URL)
	same := Origin(req.URL) == origin
	for _, r := range via[1:] {
		same = same && Origin(r.URL) == origin
	}
	if !same {
		for _, h := range credentialHeaders {
			req.Header.Del(h)
		}
	}
	return nil
}

// Origin returns u's origin as scheme://host:port, lower-cased, with the
// scheme's default port written out: https://Hub.example and
// https://hub.example:443 have the same origin, http://hub.example and
// https://hub.example or hub.example:8080 do not.
func Origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host + ":" + port
}
