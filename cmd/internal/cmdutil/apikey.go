package cmdutil

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/drama-tts/drama/engine/httpapi/apikey"
)

// APIKeyEnv is the environment variable that holds the key drama's
// clients of drama serve send (drama say, bench, qualify, status, encode
// --server) as "Authorization: Bearer KEY".
const APIKeyEnv = apikey.EnvKey

// APIKeyHelp is the paragraph the help of each command that calls a
// running drama serve ends with.
const APIKeyHelp = `A drama serve started with API keys answers 401 to a request without a
key (GET /health and GET /ready excepted): set DRAMA_API_KEY to one of
its keys and it is sent as "Authorization: Bearer KEY".`

// APIKey returns the key in DRAMA_API_KEY, "" when it is not set.
func (f *Factory) APIKey() string { return strings.TrimSpace(f.Getenv(APIKeyEnv)) }

// SetAPIKey puts key on req as a Bearer token; an empty key sets nothing.
func SetAPIKey(req *http.Request, key string) {
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
}

// ChallengeScope returns the scope a 403's WWW-Authenticate challenge
// names (Bearer ... scope="voices", as RFC 6750 writes it), else fallback.
func ChallengeScope(challenge, fallback string) string {
	_, after, ok := strings.Cut(challenge, `scope="`)
	if !ok {
		return fallback
	}
	scope, _, ok := strings.Cut(after, `"`)
	if !ok || strings.TrimSpace(scope) == "" {
		return fallback
	}
	return strings.TrimSpace(scope)
}

// AuthAdvice says what to do about drama serve's 401 or 403, or returns
// "" for any other status. scope is the key scope the request needs
// (speak, voices, admin), "" when the server's message names it; keySet
// whether DRAMA_API_KEY was sent.
func AuthAdvice(status int, scope string, keySet bool) string {
	with := "with the scope its message names"
	if scope != "" {
		with = "with scope " + scope
	}
	switch {
	case status == http.StatusUnauthorized && !keySet:
		return fmt.Sprintf("this drama serve requires an API key: set %s to one of its keys %s and run the command again", APIKeyEnv, with)
	case status == http.StatusUnauthorized:
		return fmt.Sprintf("this drama serve does not accept the key in %s: set %s to one of its keys %s", APIKeyEnv, APIKeyEnv, with)
	case status == http.StatusForbidden:
		return fmt.Sprintf("the key in %s lacks the scope this request needs: set %s to a key %s", APIKeyEnv, APIKeyEnv, with)
	}
	return ""
}
