package httpapi

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/drama-tts/drama/internal/hostcheck"
)

// corsExposed are the reply headers a browser page of an allowed origin may
// read.
const corsExposed = "X-Request-Id, X-Sample-Rate, X-Audio-Format, X-Finish-Reason, X-Long-Form-Segments, Retry-After"

// guard refuses requests a web page could make without the operator
// meaning it: a Host header that names neither the bound address nor a
// name for it (DNS rebinding: a page on another name whose name now points
// here), and a browser request from another origin (Origin, or
// Sec-Fetch-Site when a browser sends no Origin) that --allow-origin does
// not name. Requests of allowed origins get CORS headers, and their
// preflight OPTIONS is answered. Clients that are not browsers send
// neither header and are not affected.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hosts.Allowed(r.Host) {
			writeError(w, &apiError{Status: http.StatusMisdirectedRequest, Type: "invalid_request_error", Code: "host_not_allowed",
				Message: "Host " + hostcheck.Quote(r.Host) + " is not an address this server listens on: use " + s.selfHost() + ", or start drama serve with --allow-host " + hostcheck.HostOnly(r.Host)})
			return
		}
		origin := r.Header.Get("Origin")
		allowed := origin != "" && s.originAllowed(origin)
		switch {
		case allowed:
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Expose-Headers", corsExposed)
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Set("Access-Control-Allow-Methods", "GET, POST, PATCH, DELETE, OPTIONS")
				if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
					h.Set("Access-Control-Allow-Headers", req)
				}
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		case origin != "" && !s.sameOrigin(origin, r):
			s.refuseOrigin(w, origin)
			return
		case origin == "" && crossSiteFetch(r.Header.Get("Sec-Fetch-Site")):
			s.refuseOrigin(w, "")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) refuseOrigin(w http.ResponseWriter, origin string) {
	what := "a page of another site"
	if origin != "" {
		what = "a page of " + origin
	}
	writeError(w, &apiError{Status: http.StatusForbidden, Type: "invalid_request_error", Code: "origin_not_allowed",
		Message: "refused a request from " + what + ": start drama serve with --allow-origin " + originOrExample(origin) + " to let that page use this server"})
}

func originOrExample(origin string) string {
	if origin == "" || origin == "null" {
		return "https://app.example"
	}
	return origin
}

// crossSiteFetch reports a Sec-Fetch-Site of a request a page of another
// origin made.
func crossSiteFetch(v string) bool { return v == "cross-site" || v == "same-site" }

// sameOrigin reports whether origin is this server as the request reached
// it: http://<Host>, with a Host that the host check has already accepted.
func (s *Server) sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "http" || u.Path != "" {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}

// originAllowed reports whether origin is named by AllowOrigins ("*"
// allows every origin).
func (s *Server) originAllowed(origin string) bool {
	for _, o := range s.cfg.AllowOrigins {
		if o == "*" || strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return true
		}
	}
	return false
}

// selfHost is how a client should name this server.
func (s *Server) selfHost() string {
	return s.cfg.Addr
}
