package servecmd

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/engine/serve"
	"github.com/drama-tts/drama/engine/supervise"
)

// serveOptions parses a drama serve command line on root as the command
// does.
func serveOptions(t *testing.T, root, args string) *Options {
	t.Helper()
	ios, _, _, _ := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	f.Global.Root = root // --root, a flag of drama itself
	var opts *Options
	runF := func(_ context.Context, o *Options) error { opts = o; return nil }
	if err := cmdtest.Execute(NewCmd(f, runF), strings.Fields(args)...); err != nil {
		t.Fatal(err)
	}
	return opts
}

// refused turns a table of command lines and what each one's error must
// hold into cases of cmdtest.CheckFlags, each a usage error (exit 2).
func refused(table map[string]string) []cmdtest.FlagCase[Options] {
	var cases []cmdtest.FlagCase[Options]
	for args, want := range table {
		cases = append(cases, cmdtest.FlagCase[Options]{Args: strings.Fields(args), WantErr: want, Code: cmdutil.ExitUsage})
	}
	return cases
}

// accepted is the check of a command line that only has to be accepted.
func accepted(*Options) bool { return true }

// supervisedFake is a fake engine that makes a frame of audio each
// frameDelay, under a supervisor of its own that is not started yet.
func supervisedFake(frameDelay time.Duration) (*enginetest.Fake, *supervise.Supervisor) {
	fake := enginetest.NewFake()
	fake.FrameDelay = frameDelay
	open := func(context.Context) (engine.Engine, func(), error) { return fake, func() {}, nil }
	return fake, supervise.New(open, engine.StartRequest{}, nil)
}

// serveOver runs drama serve's HTTP server, built by serve.New from opts
// on root and install, in front of sup alone on a loopback port, and
// starts sup as drama serve does, once the server is built. It returns the
// server, its API and the address; both stop at the test's end.
func serveOver(t *testing.T, opts *Options, sup *supervise.Supervisor, root string, install engine.Install) (*serve.Server, *httpapi.Server, string) {
	t.Helper()
	return serveOverLogs(t, opts, discardLogs(), sup, root, install)
}

// serveOverLogs is serveOver with drama serve's records written to l.
func serveOverLogs(t *testing.T, opts *Options, l *logs, sup *supervise.Supervisor, root string, install engine.Install) (*serve.Server, *httpapi.Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t, opts, l, root, install, []serve.Engine{{Name: "engine-0", Sup: sup}}, ln.Addr().String())
	if err := s.Pool.Start(context.Background(), nil); err != nil {
		ln.Close()
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.HTTP.Close() })
	return s, s.API, ln.Addr().String()
}

// newServer builds drama serve's server with opts's settings over engines,
// as serve.Run does, not started; its engines stop at the test's end.
func newServer(t *testing.T, opts *Options, l *logs, root string, install engine.Install, engines []serve.Engine, addr string) *serve.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background()) // ends the voice store's watch
	t.Cleanup(cancel)
	cfg := opts.config(l, install)
	cfg.Root = root
	s, err := serve.New(ctx, cfg, engines, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Pool.Stop(context.Background()) })
	return s
}

// serveFake runs drama serve's HTTP server, as drama serve builds it from
// the command line args, in front of a fake engine with slow streamed
// audio.
func serveFake(t *testing.T, args string) (*serve.Server, *httpapi.Server, string) {
	t.Helper()
	fake, sup := supervisedFake(20 * time.Millisecond)
	srv, api, addr := serveOver(t, serveOptions(t, "", args), sup, t.TempDir(), engine.Install{})
	api.SetCapabilities(fake.Desc.Capabilities)
	return srv, api, addr
}

// apiOver serves drama serve's HTTP API with its default flags in front of
// sup, which it starts, an engine with caps, and returns its URL.
func apiOver(t *testing.T, sup *supervise.Supervisor, caps engine.Capabilities) string {
	t.Helper()
	_, api, addr := serveOver(t, serveOptions(t, "", ""), sup, t.TempDir(), engine.Install{})
	api.SetCapabilities(caps)
	return "http://" + addr
}

// rawRequest sends line ("METHOD PATH") with body over a connection of
// its own and returns the status line, the headers and the body, or ""
// when the connection closed without a reply; started, when not nil, is
// closed once the reply begins (a speech request then holds the engine).
// It may run on a goroutine of its own: it fails the test with Error.
func rawRequest(t *testing.T, addr, line, body string, started chan<- struct{}) (string, http.Header, []byte) {
	t.Helper()
	begun := func() {
		if started != nil {
			close(started)
		}
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Error(err)
		begun()
		return "", nil, nil
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	req := line + " HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\n"
	if body != "" {
		req += "Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n"
	}
	io.WriteString(conn, req+"\r\n"+body)
	br := bufio.NewReader(conn)
	_, err = br.Peek(1)
	begun()
	if err != nil {
		return "", nil, nil
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return "", nil, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Proto + " " + resp.Status, resp.Header, b
}

// rawSpeech is rawRequest's POST /v1/audio/speech: the status line and the
// headers.
func rawSpeech(t *testing.T, addr, body string, started chan<- struct{}) (string, http.Header) {
	t.Helper()
	line, h, _ := rawRequest(t, addr, "POST /v1/audio/speech", body, started)
	return line, h
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func speech(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url+"/v1/audio/speech", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
