package cmdutil

import (
	"strings"
	"testing"
)

func TestChallengeScope(t *testing.T) {
	for challenge, want := range map[string]string{
		`Bearer realm="drama serve", error="insufficient_scope", scope="voices"`: "voices",
		`Bearer`:            "speak",
		``:                  "speak",
		`Bearer scope=""`:   "speak",
		`Bearer scope="adm`: "speak",
	} {
		if got := ChallengeScope(challenge, "speak"); got != want {
			t.Errorf("%q: got %q, want %q", challenge, got, want)
		}
	}
}

func TestAuthAdvice(t *testing.T) {
	for _, c := range []struct {
		status int
		scope  string
		keySet bool
		want   string
	}{
		{401, "speak", false, "requires an API key: set DRAMA_API_KEY to one of its keys with scope speak"},
		{401, "", true, "does not accept the key in DRAMA_API_KEY: set DRAMA_API_KEY to one of its keys with the scope its message names"},
		{403, "voices", true, "lacks the scope this request needs: set DRAMA_API_KEY to a key with scope voices"},
		{500, "speak", true, ""},
	} {
		got := AuthAdvice(c.status, c.scope, c.keySet)
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("%d %q %v: got %q, want %q", c.status, c.scope, c.keySet, got, c.want)
		}
	}
}
