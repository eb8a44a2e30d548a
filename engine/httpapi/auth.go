package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/drama-tts/drama/engine/httpapi/apikey"
)

// openRoutes are the routes answered without a key: the probes of a load
// balancer, and the page's shell and its embedded assets (the same in every
// drama, no secret), so that the page can load and ask for a key.
var openRoutes = map[string]bool{
	"GET /health":    true,
	"GET /ready":     true,
	"GET /{$}":       true,
	"GET /ui/{file}": true,
}

// routeScopes is the scope each route needs when the server has keys. A
// route left out of both tables needs apikey.Admin; a request no route
// takes (a 404, a 405) needs any key.
var routeScopes = map[string]apikey.Scope{
	"POST /v1/audio/speech":  apikey.Speak,
	"GET /v1/models":         apikey.Speak,
	"GET /v1/models/{id}":    apikey.Speak,
	"GET /v1/voices":         apikey.Speak,
	"POST /v1/voices":        apikey.Voices,
	"DELETE /v1/voices/{id}": apikey.Voices,
	"POST /ui/clip-check":    apikey.Voices,
	"GET /metrics":           apikey.Admin,
	// Fish Audio's API (fish-api.md); inline references in POST /v1/tts
	// and /v1/tts/live need voices too (fishReferences)
	"POST /v1/tts":       apikey.Speak,
	"GET /v1/tts/live":   apikey.Speak,
	"GET /model":         apikey.Speak,
	"GET /model/{id}":    apikey.Speak,
	"POST /model":        apikey.Voices,
	"PATCH /model/{id}":  apikey.Voices,
	"DELETE /model/{id}": apikey.Voices,
}

// SetKeys replaces the API keys (a reload of the key file). A server
// started without keys cannot be given some, nor one with keys be left
// with none: the one is chosen at start (Config.Keys).
func (s *Server) SetKeys(keys *apikey.Set) error {
	if (keys.Len() > 0) != (s.keys.Load() != nil) {
		return errors.New("the server's keys can be replaced, not turned on or off: restart drama serve for that")
	}
	if keys.Len() > 0 {
		s.keys.Store(keys)
	}
	return nil
}

type keyCtx struct{}

// requestKey is the key a request was let in with; ok is false when the
// server has no keys.
func requestKey(ctx context.Context) (apikey.Key, bool) {
	k, ok := ctx.Value(keyCtx{}).(apikey.Key)
	return k, ok
}

// presentedKey is the key a request carries: Authorization: Bearer KEY (as
// OpenAI's and Fish Audio's SDKs send it), else X-Api-Key: KEY.
func presentedKey(r *http.Request) (string, bool) {
	if v := r.Header.Get("Authorization"); v != "" {
		scheme, key, ok := strings.Cut(strings.TrimSpace(v), " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(key), true
		}
	}
	if v := r.Header.Get("X-Api-Key"); v != "" {
		return strings.TrimSpace(v), true
	}
	return "", false
}

// authorize lets a request through when the server has no keys, when its
// route is open, or when it carries a key whose scope its route needs: a
// request without a key, or with one the server does not know, gets a 401
// (WWW-Authenticate: Bearer), one whose key lacks the scope a 403 naming
// the scope needed. The key's name goes to the access log (WithKeyName)
// and the key itself nowhere.
func (s *Server) authorize(mux *http.ServeMux, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys := s.keys.Load()
		if keys == nil {
			next.ServeHTTP(w, r)
			return
		}
		_, pattern := mux.Handler(r)
		if openRoutes[pattern] {
			next.ServeHTTP(w, r)
			return
		}
		need, known := routeScopes[pattern]
		switch {
		case pattern == "":
			need = apikey.Speak
		case !known:
			need = apikey.Admin
		}
		presented, given := presentedKey(r)
		key, ok := keys.Lookup(presented)
		if !ok {
			challenge := `Bearer realm="drama serve"`
			msg := "this server needs an API key: send it as Authorization: Bearer KEY (or X-Api-Key: KEY)"
			if given {
				challenge += `, error="invalid_token"`
				msg = "the API key is not one this server takes: check the key, or ask the server's operator for one"
			}
			w.Header().Set("WWW-Authenticate", challenge)
			writeError(w, &apiError{Status: http.StatusUnauthorized, Type: "invalid_request_error", Code: "invalid_api_key", Message: msg})
			return
		}
		noteKeyName(r.Context(), key.Name)
		if !key.Scope.Allows(need) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="drama serve", error="insufficient_scope", scope="`+need.String()+`"`)
			writeError(w, scopeError(key, need, r.Method+" "+r.URL.Path))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyCtx{}, key)))
	})
}

// scopeError is the 403 of a key whose scope falls short of need for what.
func scopeError(key apikey.Key, need apikey.Scope, what string) *apiError {
	return &apiError{Status: http.StatusForbidden, Type: "invalid_request_error", Code: "insufficient_scope",
		Message: "the key " + key.Name + " has scope " + key.Scope.String() + "; " + what + " needs scope " + need.String() +
			": use a key of scope " + need.String() + " or above (the key file's third field)"}
}

// inlineReferences says whether a speech request may carry its own
// references (raw codes, a voice no operator vetted): with keys, a key of
// scope voices (or speak with --allow-inline-references); without, only
// with --allow-inline-references.
func (s *Server) inlineReferences(ctx context.Context) *apiError {
	key, keyed := requestKey(ctx)
	switch {
	case keyed && s.cfg.AllowInlineReferences:
		return nil
	case keyed && !key.Scope.Allows(apikey.Voices):
		e := scopeError(key, apikey.Voices, "a speech request with references")
		e.Param = "references"
		return e
	case keyed:
		return nil
	case !s.cfg.AllowInlineReferences:
		return &apiError{Status: http.StatusForbidden, Type: "invalid_request_error", Param: "references", Code: "references_not_allowed",
			Message: "this server takes no references in a speech request: speak a voice from GET /v1/voices, or start drama serve with --allow-inline-references"}
	}
	return nil
}

type keyNameKey struct{}

// WithKeyName returns a context for a request under which the server calls
// fn with the name of the API key the request carries, once the key is
// known (never the key itself). An access log wraps the handler and sets
// it.
func WithKeyName(ctx context.Context, fn func(name string)) context.Context {
	return context.WithValue(ctx, keyNameKey{}, fn)
}

func noteKeyName(ctx context.Context, name string) {
	if fn, ok := ctx.Value(keyNameKey{}).(func(string)); ok && fn != nil {
		fn(name)
	}
}
