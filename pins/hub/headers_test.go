package hub

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseContentRange(t *testing.T) {
	good := map[string]ContentRange{
		"bytes 0-0/1":       {0, 0, 1},
		"bytes 10-19/100":   {10, 19, 100},
		"bytes 5-9/*":       {5, 9, -1},
		"bytes 0-1023/1024": {0, 1023, 1024},
	}
	for in, want := range good {
		if got, err := ParseContentRange(in); err != nil || got != want {
			t.Errorf("%q: want %+v, got %+v %v", in, want, got, err)
		}
	}
	for _, bad := range []string{"", "bytes */100", "bytes 9-5/100", "bytes 0-100/100", "items 0-1/2", "bytes 0-1", "bytes -1-2/3", "bytes a-b/c"} {
		if _, err := ParseContentRange(bad); !errors.Is(err, ErrBadResponse) {
			t.Errorf("%q: want ErrBadResponse, got %v", bad, err)
		}
	}
}

func TestRetryDelay(t *testing.T) {
	for _, c := range []struct {
		rl, ra string
		want   time.Duration
		ok     bool
	}{
		{`"resolvers";r=0;t=55`, "", 55 * time.Second, true},
		{`"api";r=0;t=0`, "9", 0, true},
		{"", "7", 7 * time.Second, true},
		{"", "Wed, 21 Oct 2015 07:28:00 GMT", 0, false},
		{`"x";r=1`, "", 0, false},
		{"", "10000000000", MaxRetryDelay, true},
		{`"r";t=99999999999999999999`, "", 0, false},
	} {
		if d, ok := RetryDelay(c.rl, c.ra); d != c.want || ok != c.ok {
			t.Errorf("%q %q: want %v %v, got %v %v", c.rl, c.ra, c.want, c.ok, d, ok)
		}
	}
}

func TestNextLink(t *testing.T) {
	for in, want := range map[string]string{
		`<https://h/api/x?cursor=2>; rel="next"`:               "https://h/api/x?cursor=2",
		`<https://h/a>; rel="prev", <https://h/b>; rel="next"`: "https://h/b",
		`<https://h/a>; rel=next`:                              "https://h/a",
		`<https://h/a>; rel="last"`:                            "",
		``:                                                     "",
		`garbage; rel="next"`:                                  "",
	} {
		if got := NextLink(in); got != want {
			t.Errorf("%q: want %q, got %q", in, want, got)
		}
	}
}

func TestNormalizeETag(t *testing.T) {
	for in, want := range map[string]string{`"abc"`: "abc", `W/"abc"`: "abc", "abc": "abc", ` "abc" `: "abc"} {
		if got := NormalizeETag(in); got != want {
			t.Errorf("%q: want %q, got %q", in, want, got)
		}
	}
}

func TestParseStateRejects(t *testing.T) {
	good := `{"version":1,"path":"a","size":100,"chunk":40,"done":"Aw==","hashed":40}`
	if _, err := parseState([]byte(good), "a", 100); err != nil {
		t.Fatalf("good state: %v", err)
	}
	for name, bad := range map[string]string{
		"version":   `{"version":2,"path":"a","size":100,"chunk":40,"done":"Aw==","hashed":0}`,
		"path":      `{"version":1,"path":"b","size":100,"chunk":40,"done":"Aw==","hashed":0}`,
		"chunk":     `{"version":1,"path":"a","size":100,"chunk":0,"done":"Aw==","hashed":0}`,
		"bitmap":    `{"version":1,"path":"a","size":100,"chunk":40,"done":"AwA=","hashed":0}`,
		"boundary":  `{"version":1,"path":"a","size":100,"chunk":40,"done":"Aw==","hashed":41}`,
		"not done":  `{"version":1,"path":"a","size":100,"chunk":40,"done":"AA==","hashed":40}`,
		"unknown":   `{"version":1,"path":"a","size":100,"chunk":40,"done":"Aw==","hashed":0,"x":1}`,
		"truncated": `{"version":1,`,
	} {
		if _, err := parseState([]byte(bad), "a", 100); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

func TestTokenFromEnv(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "token"), []byte("hf_file\n"), 0o600)
	env := func(kv ...string) func(string) string {
		m := map[string]string{"HF_HOME": home}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	if tok, src := TokenFromEnv(env("HF_TOKEN", "hf_env")); tok != "hf_env" || src != "HF_TOKEN" {
		t.Errorf("env: got %q %q", tok, src)
	}
	if tok, src := TokenFromEnv(env()); tok != "hf_file" || !strings.HasSuffix(src, "token") {
		t.Errorf("file: got %q %q", tok, src)
	}
	if tok, _ := TokenFromEnv(env("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1")); tok != "" {
		t.Errorf("implicit token disabled: got %q", tok)
	}
	if Endpoint(env("HF_ENDPOINT", "http://m:1/")) != "http://m:1" || Endpoint(env()) != DefaultEndpoint {
		t.Error("Endpoint")
	}
	if HubCacheDir(env()) != filepath.Join(home, "hub") || HubCacheDir(env("HF_HUB_CACHE", "/c")) != "/c" {
		t.Error("HubCacheDir")
	}
}

func FuzzParseContentRange(f *testing.F) {
	seedFrom(f, "content-range")
	f.Fuzz(func(t *testing.T, s string) {
		cr, err := ParseContentRange(s)
		if err == nil && (cr.First < 0 || cr.Last < cr.First || (cr.Size != -1 && cr.Size <= cr.Last)) {
			t.Fatalf("%q: accepted %+v", s, cr)
		}
	})
}

func FuzzRetryDelay(f *testing.F) {
	seedFrom(f, "ratelimit")
	f.Fuzz(func(t *testing.T, s string) {
		if d, ok := RetryDelay(s, s); ok && d < 0 {
			t.Fatalf("%q: negative delay %v", s, d)
		}
		_ = NextLink(s)
	})
}

func FuzzParseState(f *testing.F) {
	seedFrom(f, "state")
	f.Fuzz(func(t *testing.T, s string) {
		st, err := parseState([]byte(s), "a", 100)
		if err != nil {
			return
		}
		for i := 0; i < numChunks(st.Hashed, st.Chunk); i++ {
			_ = bit(st.Done, i)
		}
	})
}

// seedFrom adds testdata/seeds/<name>/* as seeds, one file each.
func seedFrom(f *testing.F, name string) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "seeds", name, "*"))
	if len(paths) == 0 {
		f.Fatalf("no seeds in testdata/seeds/%s", name)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
}
