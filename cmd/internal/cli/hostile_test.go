package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/internal/safetext"
	"github.com/drama-tts/drama/pins"
)

const hostileCommit = "cccccccccccccccccccccccccccccccccccccccc"

// hostileHub is a stand-in Hub on loopback, written as an attacker would:
// org/evil lists files whose names hold a terminal escape and a line feed
// that forges a line of drama's; org/gone answers 404 with a message that
// holds a C1 control and a bidi override (an HTTP header cannot carry
// ESC); org/endless lists pages that never end.
func hostileHub(t *testing.T) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/api/models/org/evil/tree/"):
			json.NewEncoder(w).Encode([]map[string]any{
				{"type": "file", "oid": strings.Repeat("1", 40), "size": 5, "path": "esc\x1b]0;PWNED\x07\x1b[31mred.txt"},
				{"type": "file", "oid": strings.Repeat("2", 40), "size": 5, "path": "a\nINJECTED: drama verified OK.txt"},
			})
		case strings.HasPrefix(r.URL.Path, "/api/models/org/gone/"):
			w.Header().Set("X-Error-Code", "RepoNotFound")
			w.Header().Set("X-Error-Message", "Repository \u009b31mnot found\u202e exe.txt")
			w.WriteHeader(http.StatusNotFound)
		case strings.HasPrefix(r.URL.Path, "/api/models/org/endless/tree/"):
			n, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
			if n < 1000 { // a client without a cap stops here
				w.Header().Set("Link", fmt.Sprintf(`<%s?cursor=%d>; rel="next"`, r.URL.Path, n+1))
			}
			page := make([]map[string]any, 1000)
			for i := range page {
				page[i] = map[string]any{"type": "file", "oid": strings.Repeat("3", 40), "size": 1, "path": fmt.Sprintf("f/%d/%d", n, i)}
			}
			json.NewEncoder(w).Encode(page)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// hostilePins writes pins without files (to be completed from the
// listing) for repo at hostileCommit.
func hostilePins(t *testing.T, repo string) string {
	t.Helper()
	p := &pins.Pins{Format: pins.Format, Variant: "full", Repo: repo, RepoType: "model", Revision: hostileCommit,
		License: "Test Licence", Engine: "cuda"}
	name := filepath.Join(t.TempDir(), "pins.json")
	if err := p.WriteFile(name); err != nil {
		t.Fatal(err)
	}
	return name
}

// noRawControl fails when out holds a control character other than the
// line feeds between lines, or a line that a name forged.
func noRawControl(t *testing.T, what, out string) {
	t.Helper()
	if strings.ContainsFunc(out, func(r rune) bool { return r != '\n' && safetext.Escapes(r) }) {
		t.Errorf("%s holds a raw control character:\n%q", what, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "INJECTED") {
			t.Errorf("%s has a line a file name forged: %q", what, l)
		}
	}
}

// TestHostileHubNamesAreRefusedAndPrintedEscaped: drama pins lock and
// drama fetch from a Hub that lists names with a terminal escape and a
// line feed refuse them, name them escaped, and create no file.
func TestHostileHubNamesAreRefusedAndPrintedEscaped(t *testing.T) {
	url := hostileHub(t)
	pinsFile := hostilePins(t, "org/evil")
	root := t.TempDir()
	for _, args := range [][]string{
		{"pins", "lock", "--root", root, "--pins", pinsFile, "--endpoint", url, "--output", "-"},
		{"fetch", "--root", root, "--pins", pinsFile, "--endpoint", url, "--accept-license", "--no-cache"},
	} {
		code, out, errOut := runCLI(t, context.Background(), args...)
		if code == 0 {
			t.Fatalf("%v: exit 0 from a listing of hostile names:\n%s\n%s", args, out, errOut)
		}
		if !strings.Contains(errOut, `esc\x1b]0;PWNED\a\x1b[31mred.txt`) && !strings.Contains(errOut, `a\nINJECTED: drama verified OK.txt`) {
			t.Errorf("%v: stderr does not name the file escaped:\n%s", args, errOut)
		}
		if !strings.Contains(errOut, "control character") || !strings.Contains(errOut, "org/evil@"+hostileCommit) {
			t.Errorf("%v: stderr does not say why, or of which listing:\n%s", args, errOut)
		}
		noRawControl(t, "stdout", out)
		noRawControl(t, "stderr", errOut)
	}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && (strings.Contains(p, "PWNED") || strings.Contains(p, "INJECTED")) {
			t.Errorf("a hostile name became a file: %q", p)
		}
		return nil
	})
}

// TestHostileHubMessageIsPrintedEscaped: the Hub's own error message is
// outside text, printed with its C1 control and bidi override escaped;
// with --json it is the message itself, encoded.
func TestHostileHubMessageIsPrintedEscaped(t *testing.T) {
	url := hostileHub(t)
	pinsFile := hostilePins(t, "org/gone")
	code, out, errOut := runCLI(t, context.Background(), "pins", "lock", "--root", t.TempDir(), "--pins", pinsFile, "--endpoint", url, "--output", "-")
	if code == 0 || !strings.Contains(errOut, `Repository \u009b31mnot found\u202e exe.txt`) {
		t.Fatalf("want the Hub's message escaped, got %d:\n%s", code, errOut)
	}
	noRawControl(t, "stdout", out)
	noRawControl(t, "stderr", errOut)
	_, _, errOut = runCLI(t, context.Background(), "pins", "lock", "--root", t.TempDir(), "--pins", pinsFile, "--endpoint", url, "--output", "-", "--json")
	var doc struct{ Error string }
	if err := json.Unmarshal([]byte(errOut), &doc); err != nil || !strings.Contains(doc.Error, "Repository \u009b31mnot found\u202e exe.txt") {
		t.Fatalf("--json: want the message itself in valid JSON, got %v:\n%s", err, errOut)
	}
}

// TestHostileHubEndlessListingNamesTheCap: a listing whose pages never end
// stops at the cap, and the error says which cap, of what, and to point
// --endpoint elsewhere.
func TestHostileHubEndlessListingNamesTheCap(t *testing.T) {
	url := hostileHub(t)
	pinsFile := hostilePins(t, "org/endless")
	code, _, errOut := runCLI(t, context.Background(), "pins", "lock", "--root", t.TempDir(), "--pins", pinsFile, "--endpoint", url, "--output", "-")
	for _, want := range []string{"100000 entries", "org/endless@" + hostileCommit, "--endpoint", url} {
		if code == 0 || !strings.Contains(errOut, want) {
			t.Errorf("want an error saying %q, got %d:\n%s", want, code, errOut)
		}
	}
}

// TestEngineErrorIsPrintedEscaped: an engine's error and the last lines of
// its log, which an error carries to the user, keep their line breaks and
// lose their escapes.
func TestEngineErrorIsPrintedEscaped(t *testing.T) {
	ios, _, _, errOut := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	err := errors.New("engine: exited with code 70\nplugin stderr (last lines):\n\x1b]0;PWNED\x07\x1b[2Jcuda: out of memory\u202e")
	printError(f, "drama serve", cmdutil.ExitEngine, err)
	want := "drama: engine: exited with code 70\nplugin stderr (last lines):\n\\x1b]0;PWNED\\x07\\x1b[2Jcuda: out of memory\\u202e\n"
	if errOut.String() != want {
		t.Fatalf("got %q\nwant %q", errOut.String(), want)
	}
}
