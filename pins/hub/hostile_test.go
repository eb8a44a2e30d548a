package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/drama-tts/drama/internal/safetext"
	"github.com/drama-tts/drama/pins"
)

// hostileHub is a stand-in Hub on loopback that answers listings as an
// attacker would: page n of a listing is what body writes, and a Link
// rel=next follows it while more(n) says so. It counts the bytes it got
// out and the requests it had; any other request (a file) is a 404,
// counted.
type hostileHub struct {
	body     func(w io.Writer, n int)
	more     func(n int) bool
	served   atomic.Int64
	requests atomic.Int64
	resolves atomic.Int64
	url      string
}

func newHostileHub(t *testing.T, body func(w io.Writer, n int), more func(n int) bool) *hostileHub {
	if more == nil {
		more = func(int) bool { return false }
	}
	h := &hostileHub{body: body, more: more}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.URL.Path, "/tree/") {
			h.resolves.Add(1)
			http.NotFound(w, r)
			return
		}
		h.requests.Add(1)
		n, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
		if h.more(n) {
			q := r.URL.Query()
			q.Set("cursor", strconv.Itoa(n+1))
			w.Header().Set("Link", fmt.Sprintf(`<%s?%s>; rel="next"`, r.URL.Path, q.Encode()))
		}
		w.Header().Set("Content-Type", "application/json")
		h.body(&countingWriter{w: w, n: &h.served}, n)
	}))
	t.Cleanup(ts.Close)
	h.url = ts.URL
	return h
}

// countingWriter counts the bytes written through it; a write that fails
// (the client hung up) stops the page.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func (h *hostileHub) client() *Client {
	c := New(h.url, "", 1)
	c.Backoff, c.MaxBackoff, c.Retries = 0, 0, 3
	return c
}

// entries writes a JSON array of count file entries, each of whose paths
// is pad bytes long.
func entries(w io.Writer, page, count, pad int) error {
	if _, err := io.WriteString(w, "["); err != nil {
		return err
	}
	name := strings.Repeat("x", pad)
	for i := range count {
		sep := ","
		if i == 0 {
			sep = ""
		}
		if _, err := fmt.Fprintf(w, `%s{"type":"file","oid":"%040d","size":1,"path":"p%d/%d/%s"}`, sep, i, page, i, name); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "]")
	return err
}

// slack is what may sit in socket buffers and the decoder's buffer beyond
// the bytes the client took when it hangs up.
const slack = 24 << 20

// TestTreeEndlessPagesStopAtEntryCap plays a Hub whose listing pages
// never end (a Link rel=next on every page): the client stops at
// MaxTreeEntries with an error naming the cap, the repository and
// revision, and what to do, having read about that many entries and no
// more. The stand-in ends its listing after three times the cap, so that
// a client without the cap gets a listing back, and fails here, instead
// of reading for ever.
func TestTreeEndlessPagesStopAtEntryCap(t *testing.T) {
	const perPage = 1000
	h := newHostileHub(t, func(w io.Writer, n int) { entries(w, n, perPage, 0) },
		func(n int) bool { return (n+1)*perPage < 3*MaxTreeEntries })
	files, err := h.client().Tree(ctxT(t), repoA, commitA)
	var ce *CapError
	if !errors.As(err, &ce) || !errors.Is(err, ErrTooLarge) || ce.Cap != "entries" {
		t.Fatalf("want a *CapError on entries, got %d files and %v", len(files), err)
	}
	for _, want := range []string{"100000 entries", repoA + "@" + commitA, "over all its pages", h.url, "check the Hub address"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if got := h.requests.Load(); got > MaxTreeEntries/perPage+1 {
		t.Errorf("the client asked for %d pages; the cap is reached at page %d", got, MaxTreeEntries/perPage+1)
	}
}

// TestTreeEndlessPagesStopAtByteCap is the attack as found: 8 MB pages
// with a next link for ever. The client stops at MaxTreeBytes over all
// pages, with the bytes the stand-in got out bounded by the cap, not by
// the listing.
func TestTreeEndlessPagesStopAtByteCap(t *testing.T) {
	const pad = 80 << 10 // 100 entries of 80 KiB: 8 MiB a page
	h := newHostileHub(t, func(w io.Writer, n int) { entries(w, n, 100, pad) },
		func(n int) bool { return (n+1)*100*pad < 2*MaxTreeBytes })
	files, err := h.client().Tree(ctxT(t), repoA, commitA)
	var ce *CapError
	if !errors.As(err, &ce) || ce.Cap != "bytes" || !strings.Contains(err.Error(), "67108864 bytes (64 MiB)") || !strings.Contains(err.Error(), repoA+"@"+commitA) {
		t.Fatalf("want a *CapError on bytes naming the cap and the repository, got %d files and %v", len(files), err)
	}
	if got := h.served.Load(); got > MaxTreeBytes+slack {
		t.Errorf("the stand-in got %d bytes out; the cap is %d", got, MaxTreeBytes)
	}
}

// TestTreeGiantPageStopsAtByteCap: one page that never ends, an array
// whose entries keep coming, and one whose single path never ends. Each
// is read to the cap once, not retried, and ends in a *CapError.
func TestTreeGiantPageStopsAtByteCap(t *testing.T) {
	for name, body := range map[string]func(w io.Writer){
		"endless array": func(w io.Writer) {
			io.WriteString(w, "[")
			for i := 0; ; i++ {
				if _, err := fmt.Fprintf(w, `{"type":"file","oid":"%040d","size":1,"path":"f/%d%s"},`, i, i, strings.Repeat("y", 4000)); err != nil {
					return
				}
				if i > 4*MaxTreeBytes/4000 {
					return // a client without the cap: it gets a malformed page, not a cap
				}
			}
		},
		"endless path": func(w io.Writer) {
			io.WriteString(w, `[{"type":"file","path":"`)
			chunk := strings.Repeat("z", 64<<10)
			for i := 0; i < 4*MaxTreeBytes/len(chunk); i++ {
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHostileHub(t, func(w io.Writer, n int) { body(w) }, nil)
			_, err := h.client().Tree(ctxT(t), repoA, commitA)
			var ce *CapError
			if !errors.As(err, &ce) || ce.Cap != "bytes" {
				t.Fatalf("want a *CapError on bytes, got %v", err)
			}
			if got := h.requests.Load(); got != 1 {
				t.Errorf("the page was asked for %d times; a cap reached is not retried", got)
			}
			if got := h.served.Load(); got > MaxTreeBytes+slack {
				t.Errorf("the stand-in got %d bytes out; the cap is %d", got, MaxTreeBytes)
			}
		})
	}
}

// TestTreeOnePageOfTooManyEntries: the entry cap holds inside one page.
func TestTreeOnePageOfTooManyEntries(t *testing.T) {
	h := newHostileHub(t, func(w io.Writer, n int) { entries(w, n, MaxTreeEntries+1, 0) }, nil)
	_, err := h.client().Tree(ctxT(t), repoA, commitA)
	var ce *CapError
	if !errors.As(err, &ce) || ce.Cap != "entries" {
		t.Fatalf("want a *CapError on entries, got %v", err)
	}
}

// TestTreeEmptyPagesThatLinkOnAreRefused: pages that hold nothing but a
// next link would escape the entry cap; the first is refused.
func TestTreeEmptyPagesThatLinkOnAreRefused(t *testing.T) {
	h := newHostileHub(t, func(w io.Writer, n int) { io.WriteString(w, "[]") },
		func(n int) bool { return n < 10*MaxTreeEntries })
	_, err := h.client().Tree(ctxT(t), repoA, commitA)
	if !errors.Is(err, ErrBadResponse) || !strings.Contains(err.Error(), "empty page") {
		t.Fatalf("want ErrBadResponse for an empty page with a next link, got %v", err)
	}
	if got := h.requests.Load(); got != 1 {
		t.Errorf("the client asked for %d pages; want 1", got)
	}
}

// TestTreeWithinTheCapsIsRead: a listing just under both caps, over many
// pages, is read whole: the caps refuse only what no checkpoint needs.
func TestTreeWithinTheCapsIsRead(t *testing.T) {
	h := newHostileHub(t, func(w io.Writer, n int) { entries(w, n, 1000, 0) }, func(n int) bool { return n < 9 })
	files, err := h.client().Tree(ctxT(t), repoA, commitA)
	if err != nil || len(files) != 10000 {
		t.Fatalf("want 10000 files, got %d and %v", len(files), err)
	}
}

// hostileNames are file names a Hub may list that drama must not print
// raw or turn into a path: a terminal escape (window title, colour), a
// line feed forging a line of drama's own, DEL and a C1 control (CSI).
var hostileNames = map[string]string{
	"escape":  "esc\x1b]0;PWNED\x07\x1b[31mred.txt",
	"newline": "a\nINJECTED: drama verified OK.txt",
	"DEL":     "del\x7f.bin",
	"C1":      "c1\u009b31m.bin",
	"tab":     "tab\t.bin",
}

// TestCompleteRefusesControlCharacterNames: a listing that names a file
// with a control character is refused before any file is asked for, with
// the name escaped in the message.
func TestCompleteRefusesControlCharacterNames(t *testing.T) {
	for what, name := range hostileNames {
		t.Run(what, func(t *testing.T) {
			js, _ := json.Marshal(name)
			h := newHostileHub(t, func(w io.Writer, n int) {
				fmt.Fprintf(w, `[{"type":"file","oid":"%040d","size":1,"path":%s},{"type":"file","oid":"%040d","size":1,"path":"config.json"}]`,
					1, js, 2)
			}, nil)
			p := &pins.Pins{Format: pins.Format, Variant: "t", Repo: repoA, Revision: commitA}
			_, err := h.client().Complete(ctxT(t), p)
			if err == nil || !errors.Is(err, ErrBadResponse) || !strings.Contains(err.Error(), strconv.Quote(name)) ||
				!strings.Contains(err.Error(), "control character") || !strings.Contains(err.Error(), repoA+"@"+commitA) {
				t.Fatalf("want a refusal naming %q and the listing, got %v", name, err)
			}
			if strings.ContainsFunc(err.Error(), safetext.IsControl) {
				t.Errorf("the error holds a control character: %q", err)
			}
			if got := h.resolves.Load(); got != 0 {
				t.Errorf("%d files were asked for after the listing named %q", got, name)
			}
		})
	}
}

// TestFetchRefusesControlCharacterNames: pins that name such a file are
// refused before anything is asked or written: no file of that name, or
// any other, appears in the cache.
func TestFetchRefusesControlCharacterNames(t *testing.T) {
	for what, name := range hostileNames {
		t.Run(what, func(t *testing.T) {
			fx := newFixture(t)
			files := map[string][]byte{name: []byte("payload"), "config.json": []byte(`{}`)}
			pf := fx.addRepo(repoA, commitA, files)
			cache := filepath.Join(fx.dir, "cache")
			_, err := fx.fetcher(cache).Fetch(ctxT(t), repoA, commitA, pf)
			if err == nil || !strings.Contains(err.Error(), strconv.Quote(name)) || strings.ContainsFunc(err.Error(), safetext.IsControl) {
				t.Fatalf("want a refusal naming %q escaped, got %v", name, err)
			}
			filepath.WalkDir(fx.dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() && strings.HasPrefix(p, cache) {
					t.Errorf("the refused fetch wrote %s", p)
				}
				return nil
			})
		})
	}
}

// TestHubErrorMessageIsBounded: the Hub's own message is carried into the
// error cut to maxErrorMessage bytes, however long the header it sent.
func TestHubErrorMessageIsBounded(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Error-Code", strings.Repeat("C", 4096))
		w.Header().Set("X-Error-Message", strings.Repeat("é", 256<<10))
		w.WriteHeader(http.StatusNotFound)
	}))
	t.Cleanup(ts.Close)
	c := New(ts.URL, "", 1)
	c.Retries = 0
	_, err := c.Tree(ctxT(t), repoA, commitA)
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("want ErrNotFound, got %v", err)
	}
	if n := len(err.Error()); n > maxErrorMessage+64+512 {
		t.Fatalf("the error is %d bytes long; the Hub's message is cut to %d", n, maxErrorMessage)
	}
	if !strings.Contains(err.Error(), "bytes more)") || !utf8.ValidString(err.Error()) {
		t.Fatalf("want the cut marked, at a character's start: %.200q", err)
	}
}
