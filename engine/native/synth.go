package native

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/drama-tts/drama/engine"
)

// Synthesize sends the request to the native server and returns once the
// server accepted it. Busy answers are retried inside (after 2 ms, then
// pauses doubling up to 10 ms for the first half second, then 50 ms, for up to 10 s); a refusal is invalid input in the server's words.
func (e *Engine) Synthesize(ctx context.Context, req engine.SynthesisRequest) (engine.AudioStream, error) {
	client, proc, err := e.current()
	if err != nil {
		return nil, err
	}
	if len(req.References) > 0 && !e.flavor.References {
		return nil, engine.Invalidf("references: the %s engine takes voices only from its catalog; publish the voice there", e.flavor.Name)
	}
	st, err := client.Open(ctx, speechRequest(req))
	if err != nil {
		return nil, e.mapError("synthesize", err, proc)
	}
	return &audioStream{e: e, st: st, proc: proc, header: streamHeader(st)}, nil
}

func speechRequest(req engine.SynthesisRequest) *SpeechRequest {
	s := &SpeechRequest{Input: req.Input, Voice: req.Voice, Stream: req.Stream, MaxFrames: req.MaxFrames,
		Instructions: req.Instructions, ResponseFormat: FormatWAV}
	if req.Stream {
		s.ResponseFormat = FormatPCM
	}
	if req.Speed != 0 {
		speed := req.Speed
		s.Speed = &speed
	}
	for _, r := range req.References {
		s.References = append(s.References, Reference{Text: r.Text, VQCodes: r.Codes})
	}
	return s
}

// streamHeader describes the reply's audio. A whole WAV reply framed by
// its Content-Length is sized: the server said its length (the WAV
// header) and its end (X-Finish-Reason, X-Long-Form-Segments) before the
// audio, as the end the stream reports will be (finish reads the same
// headers). A stream's are known only at its end.
func streamHeader(st *Stream) engine.AudioHeader {
	h := engine.AudioHeader{SampleRate: SampleRate, Channels: 1, BitsPerSample: 16}
	n, starts, err := ParseLongFormSegments(st.Header(HeaderLongFormSegments))
	if err != nil {
		return h
	}
	h.LongFormSegments = n
	size, ok := st.Whole()
	reason := st.Header(HeaderFinishReason)
	if reason == "" {
		reason = FinishStop
	}
	r, rerr := engine.ParseFinishReason(reason)
	if !ok || size%BytesPerSample != 0 || rerr != nil {
		return h
	}
	h.Sized, h.Samples, h.Reason = true, size/BytesPerSample, r
	for _, s := range starts {
		h.SegmentOffsets = append(h.SegmentOffsets, int64(s))
	}
	return h
}

// mapError turns a contract error into an engine error of the right kind.
// A broken reply from a server that has died carries its exit and output.
func (e *Engine) mapError(op string, err error, proc *Process) error {
	var se *StatusError
	switch {
	case errors.As(err, &se) && se.Code == 400:
		return &engine.Error{Kind: engine.KindInvalid, Op: op, Msg: se.Message, Err: err}
	case errors.Is(err, ErrBusy):
		return &engine.Error{Kind: engine.KindBusy, Op: op, Msg: "the native engine stayed busy for 10 s", Err: err}
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	}
	select {
	case <-proc.Done():
	case <-time.After(500 * time.Millisecond):
	}
	if x := proc.Exit(); x != nil && !x.Stopped {
		return &engine.Error{Kind: engine.KindFailed, Op: op, Msg: x.Error(), LogTail: x.Tail, Err: err}
	}
	return &engine.Error{Kind: engine.KindFailed, Op: op, Msg: err.Error(), LogTail: proc.Tail(), Err: err}
}

// audioStream adapts a contract Stream to engine.AudioStream.
type audioStream struct {
	e      *Engine
	st     *Stream
	proc   *Process
	header engine.AudioHeader
	final  engine.Final
}

// Header describes the PCM that follows.
func (a *audioStream) Header() engine.AudioHeader { return a.header }

// Next returns the next PCM chunk, io.EOF after the last.
func (a *audioStream) Next() ([]byte, error) {
	p, err := a.st.Next()
	if errors.Is(err, io.EOF) {
		return nil, a.finish()
	}
	if err != nil {
		return nil, a.e.mapError("synthesize", err, a.proc)
	}
	return p, nil
}

// Buffered returns how much audio the next Next returns without waiting.
func (a *audioStream) Buffered() int { return a.st.Buffered() }

func (a *audioStream) finish() error {
	r := a.st.Result()
	reason, err := engine.ParseFinishReason(r.FinishReason)
	if err != nil {
		return err
	}
	n, starts, _ := ParseLongFormSegments(r.LongFormSegments)
	a.final = engine.Final{Reason: reason, LongFormSegments: n, Samples: r.Bytes / BytesPerSample,
		FirstAudio: r.FirstAudio, Total: r.Total, BusyRetries: r.BusyRetries}
	for _, s := range starts {
		a.final.SegmentOffsets = append(a.final.SegmentOffsets, int64(s))
	}
	return io.EOF
}

// Final is the end of the synthesis, once Next returned io.EOF.
func (a *audioStream) Final() engine.Final { return a.final }

// Close closes the connection; before io.EOF it cancels the synthesis.
func (a *audioStream) Close() error { return a.st.Close() }
