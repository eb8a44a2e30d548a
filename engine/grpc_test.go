package engine_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/drama-tts/drama/engine"
	pb "github.com/drama-tts/drama/engine/enginepb"
	"github.com/drama-tts/drama/engine/enginetest"
)

// stub is an Engine whose Synthesize hands out the chunks it is given and
// then fails with failErr, if set.
type stub struct {
	*enginetest.Fake
	header   *engine.AudioHeader // nil: an unsized header
	final    engine.Final        // when its Reason is set; else length
	chunks   [][]byte
	burst    bool // its stream says what has arrived (Buffered)
	failErr  error
	synthErr error
	ctxSeen  chan error
	encoded  []engine.Clip
}

func (s *stub) Synthesize(ctx context.Context, req engine.SynthesisRequest) (engine.AudioStream, error) {
	if s.synthErr != nil {
		return nil, s.synthErr
	}
	if s.burst {
		return burstStream{&stubStream{s: s, ctx: ctx}}, nil
	}
	return &stubStream{s: s, ctx: ctx}, nil
}

// burstStream is a stub stream whose audio has all arrived, as a native
// whole reply's has: Buffered says what is left.
type burstStream struct{ *stubStream }

func (b burstStream) Buffered() int {
	n := 0
	for _, c := range b.s.chunks[b.i:] {
		n += len(c)
	}
	return n
}

func (s *stub) Encode(ctx context.Context, req engine.EncodeRequest, progress func(engine.EncodeProgress)) ([]engine.EncodedClip, error) {
	s.encoded = req.Clips
	return s.Fake.Encode(ctx, req, progress)
}

type stubStream struct {
	s   *stub
	ctx context.Context
	i   int
}

func (st *stubStream) Header() engine.AudioHeader {
	if st.s.header != nil {
		return *st.s.header
	}
	return engine.AudioHeader{SampleRate: engine.SampleRate, Channels: 1, BitsPerSample: 16}
}
func (st *stubStream) Final() engine.Final {
	if st.s.final.Reason != engine.FinishUnknown {
		return st.s.final
	}
	return engine.Final{Reason: engine.FinishLength}
}
func (st *stubStream) Close() error { return nil }
func (st *stubStream) Next() ([]byte, error) {
	if st.i < len(st.s.chunks) {
		st.i++
		return st.s.chunks[st.i-1], nil
	}
	if st.s.ctxSeen != nil {
		<-st.ctx.Done()
		st.s.ctxSeen <- st.ctx.Err()
		return nil, st.ctx.Err()
	}
	if st.s.failErr != nil {
		return nil, st.s.failErr
	}
	return nil, io.EOF
}

// serve serves impl with the options plugins use, over a unix socket, and
// returns a host-side Engine with the host's dial options.
func serve(t testing.TB, impl engine.Engine) engine.Engine {
	t.Helper()
	return engine.NewGRPCClient(dialService(t, func(s *grpc.Server) {
		pb.RegisterEngineServer(s, engine.NewGRPCServer(impl, nil))
	}))
}

// dialService serves what register adds, with the options plugins use
// (and opts), over a unix socket, and returns a connection to it with the
// host's dial options.
func dialService(t testing.TB, register func(*grpc.Server), opts ...grpc.ServerOption) *grpc.ClientConn {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(append(engine.ServerOptions(), opts...)...)
	register(srv)
	go srv.Serve(ln)
	conn, err := grpc.NewClient("unix://"+ln.Addr().String(),
		append(engine.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); srv.Stop() })
	return conn
}

func read(t *testing.T, e engine.Engine) ([]byte, []int, engine.Final, error) {
	t.Helper()
	as, err := e.Synthesize(context.Background(), engine.SynthesisRequest{Input: "x"})
	if err != nil {
		return nil, nil, engine.Final{}, err
	}
	defer as.Close()
	var pcm []byte
	var sizes []int
	for {
		p, err := as.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return pcm, sizes, as.Final(), err
		}
		pcm = append(pcm, p...)
		sizes = append(sizes, len(p))
	}
}

func TestRelayRegroupsWholeSamples(t *testing.T) {
	big := bytes.Repeat([]byte{1, 2}, engine.MaxChunk) // 64 KiB
	s := &stub{chunks: [][]byte{{1}, {2, 3, 4}, big, {5, 6, 7}, {8}}}
	pcm, sizes, final, err := read(t, serve(t, s))
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Join(s.chunks, nil)
	if !bytes.Equal(pcm, want) {
		t.Fatalf("relayed audio differs: want %d bytes, got %d", len(want), len(pcm))
	}
	for _, n := range sizes {
		if n%2 != 0 || n > engine.MaxChunk || n == 0 {
			t.Errorf("chunk of %d bytes: want whole samples within %d", n, engine.MaxChunk)
		}
	}
	if final.Reason != engine.FinishLength || final.Samples != int64(len(want)/2) {
		t.Errorf("final = %+v, want length and %d samples", final, len(want)/2)
	}
}

func TestRelayStrayByteFails(t *testing.T) {
	_, _, _, err := read(t, serve(t, &stub{chunks: [][]byte{{1, 2, 3}}}))
	if !errors.Is(err, engine.ErrFailed) || !strings.Contains(err.Error(), "inside a sample") {
		t.Fatalf("err = %v, want an engine-failed error about a stray byte", err)
	}
}

func TestErrorAfterFirstChunkIsNotEOF(t *testing.T) {
	s := &stub{chunks: [][]byte{{1, 2}}, failErr: &engine.Error{Kind: engine.KindFailed, LogTail: "oom at layer 3", Err: errors.New("native died")}}
	pcm, _, _, err := read(t, serve(t, s))
	if len(pcm) != 2 {
		t.Fatalf("want the first chunk, got %d bytes", len(pcm))
	}
	var e *engine.Error
	if !errors.As(err, &e) || e.Kind != engine.KindFailed || e.LogTail != "oom at layer 3" || !strings.Contains(e.Msg, "native died") {
		t.Fatalf("err = %#v, want engine failed with the log tail", err)
	}
}

func TestErrorKindsCrossTheWire(t *testing.T) {
	for _, want := range []error{
		engine.Invalidf("voice %q: no such voice", "bob"),
		engine.Errorf(engine.KindBusy, "still busy after 10s"),
		engine.NotReadyf("loading 40%%"),
		&engine.Error{Kind: engine.KindFailed, LogTail: "tail", Err: errors.New("boom")},
		errors.New("plain"),
	} {
		_, err := serve(t, &stub{synthErr: want}).Synthesize(context.Background(), engine.SynthesisRequest{})
		wk, _ := engine.KindOf(want)
		gk, _ := engine.KindOf(err)
		if wk != gk {
			t.Errorf("%v: kind: want %v, got %v", want, wk, gk)
		}
		if !strings.Contains(err.Error(), strings.TrimPrefix(want.Error(), "engine: ")) {
			t.Errorf("message: want %q inside, got %q", want, err)
		}
	}
}

func TestCancelReachesTheEngine(t *testing.T) {
	s := &stub{chunks: [][]byte{{1, 2}}, ctxSeen: make(chan error, 1)}
	e := serve(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	as, err := e.Synthesize(ctx, engine.SynthesisRequest{Input: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := as.Next(); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-s.ctxSeen:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("engine saw %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the engine's context was not cancelled")
	}
	if _, err := as.Next(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next after cancel = %v, want context.Canceled", err)
	}
	as.Close()
}

func TestLargeMessages(t *testing.T) {
	s := &stub{Fake: enginetest.NewFake()}
	data := enginetest.Tone(3, 3<<20) // 6 MiB: over gRPC's 4 MiB default
	out, err := serve(t, s).Encode(context.Background(), engine.EncodeRequest{Clips: []engine.Clip{{ID: "big", Data: data}}}, nil)
	if err != nil {
		t.Fatalf("Encode of a 6 MiB clip: %v", err)
	}
	if len(s.encoded) != 1 || !bytes.Equal(s.encoded[0].Data, data) || out[0].Samples != int64(len(data)/2) {
		t.Fatalf("the clip did not arrive whole")
	}
}

func TestTransportFailureIsEngineFailed(t *testing.T) {
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	conn, err := grpc.NewClient("unix://"+ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = engine.NewGRPCClient(conn).Describe(context.Background())
	if !errors.Is(err, engine.ErrFailed) {
		t.Fatalf("err = %v, want engine failed", err)
	}
}
