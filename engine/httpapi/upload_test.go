package httpapi

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/httpapi/upload/uploadtest"
)

// bigForm is a clone request with one clip of n bytes (and a transcript
// field per clip, clips times).
func bigForm(n, clips int) (string, []byte) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	mw.WriteField("name", "Big")
	mw.WriteField("source", "synthetic")
	for range clips {
		fw, _ := mw.CreateFormFile("clip", "take.wav")
		fw.Write(make([]byte, n))
		mw.WriteField("transcript", "Hello there.")
	}
	mw.Close()
	return mw.FormDataContentType(), b.Bytes()
}

func emptyDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("left behind in %s: %s", dir, e.Name())
	}
}

func postForm(t *testing.T, url, ct string, body []byte) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(url+"/v1/voices", ct, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestCloneUploadGoesToDiskAndIsRemoved: a clip over 32 MiB (where
// net/http's form parser spills to the system's temporary directory) is
// written under the upload directory while the clone runs, never held in
// memory, and nothing is left in either directory afterwards.
func TestCloneUploadGoesToDiskAndIsRemoved(t *testing.T) {
	tmp, uploads := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var sizes []int64
	var inUploads []bool
	ts, _ := startBound(t, func(c *Config) {
		c.Uploads = UploadLimits{Dir: uploads}
		c.Voices = &recordingStore{seen: func(req CloneRequest) {
			for _, clip := range req.Clips {
				st, err := os.Stat(clip.Path)
				if err != nil || clip.Data != nil {
					t.Errorf("clip %q: %v (Data %d bytes): want a file", clip.Path, err, len(clip.Data))
					continue
				}
				sizes = append(sizes, st.Size())
				inUploads = append(inUploads, strings.HasPrefix(clip.Path, uploads+string(os.PathSeparator)))
			}
		}}
	})
	ct, body := bigForm(40<<20, 2)
	resp, msg := postForm(t, ts.URL, ct, body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("clone: %d %s", resp.StatusCode, msg)
	}
	if len(sizes) != 2 || sizes[0] != 40<<20 || sizes[1] != 40<<20 || !inUploads[0] || !inUploads[1] {
		t.Fatalf("clips seen by the store: sizes %v, under the upload dir %v", sizes, inUploads)
	}
	emptyDir(t, tmp)
	emptyDir(t, uploads)
}

func TestCloneUploadLimits(t *testing.T) {
	uploads := t.TempDir()
	ts, srv := startBound(t, func(c *Config) {
		c.Uploads = UploadLimits{Dir: uploads, MaxClipBytes: 1 << 20, MaxRequestBytes: 3 << 20, MaxClips: 4}
	})
	for _, tc := range []struct {
		name        string
		n, clips    int
		status      int
		param, want string
	}{
		{"clip over its limit", 1<<20 + 1, 1, 413, "clip", "--max-clip-bytes"},
		{"request over its limit", 1 << 19, 7, 413, "", "--max-upload-bytes"},
		{"too many clips", 10, 5, 400, "clip", "at most 4"},
	} {
		ct, body := bigForm(tc.n, tc.clips)
		resp, msg := postForm(t, ts.URL, ct, body)
		if resp.StatusCode != tc.status || !strings.Contains(msg, tc.want) || (tc.param != "" && !strings.Contains(msg, `"param":"`+tc.param+`"`)) {
			t.Errorf("%s: %d %s, want %d naming %q", tc.name, resp.StatusCode, msg, tc.status, tc.want)
		}
		emptyDir(t, uploads)
	}
	if n := srv.cfg.Voices.(*recordingStore).clones.Load(); n != 0 {
		t.Fatalf("%d clones ran past the limits", n)
	}
}

// TestOneCloneAtATime: while a clone runs, another is answered 429 with
// Retry-After (here without waiting); once it is done the next one runs.
func TestOneCloneAtATime(t *testing.T) {
	hold := make(chan struct{})
	store := &recordingStore{hold: hold}
	uploads := t.TempDir()
	ts, _ := startBound(t, func(c *Config) {
		c.Voices = store
		c.Uploads = UploadLimits{Dir: uploads, Wait: -1}
	})
	ct, body := bigForm(1000, 1)
	first := make(chan int)
	go func() {
		resp, _ := postForm(t, ts.URL, ct, body)
		first <- resp.StatusCode
	}()
	enginetest.WaitFor(t, func() bool { return store.clones.Load() == 1 })
	resp, msg := postForm(t, ts.URL, ct, body)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(msg, "one clone runs at a time") {
		t.Fatalf("second clone while one runs: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), msg)
	}
	if ents, _ := os.ReadDir(uploads); len(ents) != 1 {
		t.Fatalf("%d upload directories while one clone runs, want its own only (the one turned away removes its)", len(ents))
	}
	close(hold)
	if code := <-first; code != http.StatusCreated {
		t.Fatalf("first clone: %d", code)
	}
	if resp, msg := postForm(t, ts.URL, ct, body); resp.StatusCode != http.StatusCreated {
		t.Fatalf("clone after the first finished: %d %s", resp.StatusCode, msg)
	}
}

// TestCloneDeclaredTooLargeIsRefusedUnread: a raw client declaring a body
// over the request limit gets a 413 before it sends a byte of it.
func TestCloneDeclaredTooLargeIsRefusedUnread(t *testing.T) {
	ts, srv := startBound(t, func(c *Config) { c.Uploads = UploadLimits{Dir: t.TempDir(), MaxRequestBytes: 1 << 20} })
	addr := ts.Listener.Addr().String()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(conn, "POST /v1/voices HTTP/1.1\r\nHost: %s\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: %d\r\n\r\n", addr, 250<<20)
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 413") {
		t.Fatalf("reply to a 250 MB declared body: %q %v, want 413 at once", line, err)
	}
	if n := srv.cfg.Voices.(*recordingStore).clones.Load(); n != 0 {
		t.Fatal("a clone ran")
	}
}

// TestStalledUploadIsCut: a client that stops sending its upload half way
// is cut after the stall timeout and frees the clone slot for the next.
func TestStalledUploadIsCut(t *testing.T) {
	uploads := t.TempDir()
	ts, srv := startBound(t, func(c *Config) {
		c.Uploads = UploadLimits{Dir: uploads, Wait: 20 * time.Second}
		c.StallTimeout = 300 * time.Millisecond
	})
	addr := ts.Listener.Addr().String()
	ct, body := bigForm(1<<20, 1)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "POST /v1/voices HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", addr, ct, len(body))
	conn.Write(body[:len(body)/2]) // and nothing more
	enginetest.WaitFor(t, func() bool { ents, _ := os.ReadDir(uploads); return len(ents) == 1 })
	resp, msg := postForm(t, ts.URL, ct, body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("clone after a stalled upload: %d %s", resp.StatusCode, msg)
	}
	line, _ := bufio.NewReader(conn).ReadString('\n')
	if !strings.HasPrefix(line, "HTTP/1.1 408") {
		t.Fatalf("the stalled upload got %q, want a 408", line)
	}
	if n := srv.cfg.Voices.(*recordingStore).clones.Load(); n != 1 {
		t.Fatalf("%d clones, want the complete one only", n)
	}
	emptyDir(t, uploads)
}

// TestSlowUploadDoesNotHoldTheCloneSlot plays a slow-loris uploader: a
// clone request whose body comes a byte at a time, never slow enough for
// the stall timeout. While it trickles in, a normal clone gets the clone
// slot and is made (here with no wait for the slot at all); the slow one
// is answered 408 naming --upload-timeout before its body is sent, and no
// file of either is left.
func TestSlowUploadDoesNotHoldTheCloneSlot(t *testing.T) {
	// both clone routes read their uploads alike: POST /v1/voices and Fish's POST /model
	for _, path := range []string{"/v1/voices", "/model"} {
		t.Run(path, func(t *testing.T) { slowUploadHoldsNoSlot(t, path) })
	}
}

func slowUploadHoldsNoSlot(t *testing.T, path string) {
	uploads := t.TempDir()
	ts, srv := startBound(t, func(c *Config) {
		c.Uploads = UploadLimits{Dir: uploads, Wait: -1, Timeout: 2 * time.Second}
		c.StallTimeout = 30 * time.Second
	})
	addr := ts.Listener.Addr().String()
	ct, body := bigForm(4000, 1)
	slow := uploadtest.Slow(t.Context(), addr, path, ct, body, 10*time.Millisecond)
	enginetest.WaitFor(t, func() bool { ents, _ := os.ReadDir(uploads); return len(ents) == 1 })
	resp, msg := postForm(t, ts.URL, ct, body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("a normal clone while a slow upload trickles in: %d %s", resp.StatusCode, msg)
	}
	r := <-slow
	if r.Status != http.StatusRequestTimeout || !strings.Contains(r.Body, `"code":"upload_timeout"`) || !strings.Contains(r.Body, "--upload-timeout") || r.Sent == len(body) {
		t.Fatalf("the slow upload: %d %s (%d of %d bytes sent) %v, want a 408 naming --upload-timeout before it is all sent", r.Status, r.Body, r.Sent, len(body), r.Err)
	}
	if n := srv.cfg.Voices.(*recordingStore).clones.Load(); n != 1 {
		t.Fatalf("%d clones, want the normal one only", n)
	}
	emptyDir(t, uploads)
}

// TestCloneIsReceivedBeforeItWaits: while a clone runs, the next one's
// upload is taken in whole, to disk, and only then does it wait for the
// slot (here long enough for the first to end).
func TestCloneIsReceivedBeforeItWaits(t *testing.T) {
	uploads := t.TempDir()
	hold := make(chan struct{})
	store := &recordingStore{hold: hold}
	ts, _ := startBound(t, func(c *Config) {
		c.Voices = store
		c.Uploads = UploadLimits{Dir: uploads, Wait: time.Minute}
	})
	var once sync.Once
	free := func() { once.Do(func() { close(hold) }) }
	t.Cleanup(free) // before the server closes, which waits for its requests
	ct, body := bigForm(1<<20, 1)
	first := make(chan int)
	go func() {
		resp, _ := postForm(t, ts.URL, ct, body)
		first <- resp.StatusCode
	}()
	enginetest.WaitFor(t, func() bool { return store.clones.Load() == 1 })
	second := make(chan int)
	go func() {
		resp, _ := postForm(t, ts.URL, ct, body)
		second <- resp.StatusCode
	}()
	// the second request's clip is on disk whole while the first holds the slot
	enginetest.WaitFor(t, func() bool { return clipsOfSize(uploads, 1<<20) == 2 })
	if n := store.clones.Load(); n != 1 {
		t.Fatalf("%d clones began while the first holds the slot", n)
	}
	free()
	if a, b := <-first, <-second; a != http.StatusCreated || b != http.StatusCreated {
		t.Fatalf("first clone %d, second %d, want both made", a, b)
	}
	emptyDir(t, uploads)
}

// clipsOfSize counts the files of size n in the request directories
// under dir.
func clipsOfSize(dir string, n int64) int {
	files, _ := filepath.Glob(filepath.Join(dir, "*", "clip-*"))
	count := 0
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && st.Size() == n {
			count++
		}
	}
	return count
}
