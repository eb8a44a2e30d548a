package engine

import (
	"context"
	"slices"
	"time"

	"github.com/drama-tts/drama/internal/model"
)

// APIVersion is the version of the engine contract. It is the go-plugin
// protocol version a plugin serves, so a host and a plugin that disagree on
// it fail the handshake instead of misreading each other.
const APIVersion = 1

// Audio facts every engine speaks: mono 16-bit little-endian PCM at 44.1 kHz.
const (
	SampleRate    = model.SampleRate
	Channels      = 1
	BitsPerSample = 16
	// MaxChunk is the most PCM bytes one audio chunk may carry. A chunk
	// always holds whole samples (an even number of bytes). It is 32 KiB
	// less the 8 bytes that frame a chunk in the plugin protocol's audio
	// event, so that the event is at most 32 KiB: gRPC marshals and reads
	// a message in a buffer of the next size it pools, and the one after
	// 32 KiB is 1 MiB, zeroed on every use at both ends.
	MaxChunk = 32<<10 - 8
	// NumCodebooks is the number of codebooks in one codec frame.
	NumCodebooks = 10
	// SamplesPerFrame is the number of PCM samples one codec frame covers.
	SamplesPerFrame = model.SamplesPerFrame
)

// Engine is a text-to-speech engine as drama sees it: a plugin process that
// supervises a native server. Every method takes a context; cancelling it
// cancels the work in the engine. Errors are *Error values whose Kind says
// how a caller should react (see ErrInvalidInput and its siblings).
//
// An Engine runs one synthesis at a time. The engine's own short busy window
// after a cancel is retried inside the engine; ErrBusy reaches the caller
// only when the engine stayed busy past that window. Its two halves are
// Lifecycle and Speech.
type Engine interface {
	Lifecycle
	Speech
}

// Lifecycle is the half of an Engine that runs the native engine: start,
// health and stop. A supervisor holds it; what only speaks through an
// engine (a pool's member, the HTTP API) needs none of it.
type Lifecycle interface {
	// Start launches the native engine and loads the model, calling events
	// for each lifecycle step (preflight, spawned, loading with progress,
	// ready). It returns nil once the engine is ready, or the error that
	// stopped it (after an exited event). events may be nil; it is called
	// from the goroutine that called Start.
	Start(ctx context.Context, req StartRequest, events func(LifecycleEvent)) error
	// Health reports the engine's state without touching speech.
	Health(ctx context.Context) (Health, error)
	// Stop stops the native engine: a polite signal, the grace period, then
	// a kill. Stopping an engine that is not running is not an error.
	Stop(ctx context.Context, req StopRequest) (StopResult, error)
}

// Speech is the half of an Engine that a running engine serves: what it
// is, its voices, a synthesis, an encode.
type Speech interface {
	// Describe reports what the plugin is and can do. It needs no Start.
	Describe(ctx context.Context) (Description, error)
	// Voices lists the voices the running engine serves.
	Voices(ctx context.Context) ([]Voice, error)
	// Synthesize starts one synthesis. It returns once the engine has
	// accepted the request and the audio header is known, so input errors
	// and busy come back here, before any audio. The caller must Close the
	// stream.
	Synthesize(ctx context.Context, req SynthesisRequest) (AudioStream, error)
	// Encode turns clips into codec codes, calling progress as it goes
	// (progress may be nil). Results come back in the order of the clips.
	Encode(ctx context.Context, req EncodeRequest, progress func(EncodeProgress)) ([]EncodedClip, error)
}

// AudioStream is one synthesis in flight: the audio header, then PCM chunks,
// then the final event.
type AudioStream interface {
	// Header describes the audio that follows.
	Header() AudioHeader
	// Next returns the next PCM chunk: whole samples, at most MaxChunk
	// bytes. After the last chunk it returns io.EOF; any other error means
	// the audio is incomplete and must not be passed on as if it were whole.
	// The returned slice is valid until the next call.
	Next() ([]byte, error)
	// Final is the synthesis's end: the finish reason and timings. It is
	// valid once Next has returned io.EOF.
	Final() Final
	// Close releases the stream; closing before io.EOF cancels the
	// synthesis in the engine.
	Close() error
}

// Description is what a plugin says about itself.
type Description struct {
	Name       string // short name, e.g. "cuda": the binary is drama-engine-<name>
	Version    string // the plugin's own version
	APIVersion int    // the contract version it speaks (APIVersion)
	OS         string // runtime.GOOS the plugin was built for
	Arch       string // runtime.GOARCH the plugin was built for
	Engine     string // the native engine it drives, e.g. "tensorfold-native"
	// Variants are the model variants it can serve, e.g. "full", "nvfp4".
	Variants     []string
	Capabilities Capabilities
	// MemoryEstimate is the expected peak memory in bytes per variant.
	MemoryEstimate map[string]uint64
}

// Capabilities are the features that vary between engines.
type Capabilities struct {
	Stream         bool // PCM streamed as it is made
	LongForm       bool // long texts split into segments by the engine
	References     bool // references accepted in a synthesis request
	Encode         bool // clips encoded into codes
	VoiceCatalog   bool // voices only from a catalog read at start
	RestartToClone bool // a cloned voice is published by restarting the engine
	MaxFrames      int  // the largest max_frames accepted; 0 means no stated limit
}

// List returns the names of the capabilities that are on, in a fixed order,
// for display.
func (c Capabilities) List() []string {
	var out []string
	for _, f := range []struct {
		on   bool
		name string
	}{
		{c.Stream, "stream"}, {c.LongForm, "long-form"}, {c.References, "references"},
		{c.Encode, "encode"}, {c.VoiceCatalog, "voice-catalog"}, {c.RestartToClone, "restart-to-clone"},
	} {
		if f.on {
			out = append(out, f.name)
		}
	}
	return out
}

// Install names the files an engine works from. Paths are on the host the
// plugin runs on (the plugin is always a child of the host).
type Install struct {
	Root      string // the drama root
	Variant   string // "full", "nvfp4", "macos"
	ModelDir  string // the variant's model files (weights, codec.pth, tokenizer)
	EngineBin string // the native engine binary
	// EngineSHA256 is the engine binary's expected sha256 (hex) from the
	// root's engine record; empty skips the check.
	EngineSHA256 string
	// AllowEngineMismatch starts an engine binary whose sha256 differs.
	AllowEngineMismatch bool
}

// Admission says who decides whether there is memory enough to load.
type Admission string

// Admission modes.
const (
	AdmissionOwn      Admission = "own"      // the plugin checks available memory against its estimate
	AdmissionExternal Admission = "external" // an outer scheduler decides; the plugin does not check
	AdmissionOff      Admission = "off"      // no check
)

// StartRequest configures a Start.
type StartRequest struct {
	Install
	VoicesDir    string        // voice files served (--voices)
	DefaultVoice string        // voice used when a request names none
	MaxFrames    int           // frame limit per synthesis; 0 uses the engine's default
	LongForm     bool          // split long texts into segments
	NoGuidance   bool          // serve nvfp4 without classifier-free guidance
	Admission    Admission     // empty means AdmissionOwn
	ReadyTimeout time.Duration // deadline for ready; 0 means the engine's default (900 s)
	StallTimeout time.Duration // give up when the log shows no progress this long; 0 means none
	RuntimeDir   string        // where the runtime file naming the child is kept
	Env          []string      // extra KEY=VALUE entries for the native engine's environment
	// Params are engine-specific settings, passed through unchanged.
	Params map[string]string
}

// Phase is a step of an engine's life.
type Phase int

// Lifecycle phases, in the order a Start goes through them.
const (
	PhaseUnknown   Phase = iota
	PhasePreflight       // checks before launch: binary, checksum, memory
	PhaseSpawned         // the native process is running
	PhaseLoading         // the model is loading; Progress may be known
	PhaseReady           // serving
	PhaseExited          // the native process is gone
	PhaseStopped         // stopped on request
)

var phaseNames = [...]string{"unknown", "preflight", "spawned", "loading", "ready", "exited", "stopped"}

// String returns the phase's lower-case name.
func (p Phase) String() string {
	if p < 0 || int(p) >= len(phaseNames) {
		return "unknown"
	}
	return phaseNames[p]
}

// LifecycleEvent is one step reported by Start.
type LifecycleEvent struct {
	Phase    Phase
	Message  string
	Progress float64 // 0..1 while loading; negative when unknown
	PID      int     // the native process, once spawned
	ExitCode int     // with PhaseExited
	LogTail  string  // with PhaseExited: the end of the native engine's output
	Time     time.Time
}

// Health is the engine's state as Health reports it.
type Health struct {
	Phase   Phase
	Ready   bool
	PID     int
	Since   time.Time // when the engine entered Phase
	Message string
	// LastExit describes the native process's last unexpected exit, if any.
	LastExit string
}

// StopRequest configures a Stop.
type StopRequest struct {
	// Grace is how long to wait after the polite signal before killing;
	// 0 means the engine's default.
	Grace time.Duration
}

// StopResult reports how the native engine ended.
type StopResult struct {
	WasRunning bool
	ExitCode   int
	Killed     bool   // the grace period ran out
	LogTail    string // the end of the native engine's output
}

// Voice is one voice an engine serves.
type Voice struct {
	ID         string
	Name       string
	Source     string // synthetic, self or consented, where known
	References int
	Frames     int // frames in all references together
}

// Reference is a passage spoken before the text: its exact transcript and
// its codec codes, codebook-major (NumCodebooks rows of equal length).
type Reference struct {
	Text  string
	Codes [][]int
}

// Frames returns the number of frames in the reference.
func (r Reference) Frames() int {
	if len(r.Codes) == 0 {
		return 0
	}
	return len(r.Codes[0])
}

// SynthesisRequest is one text to speak.
type SynthesisRequest struct {
	RequestID    string
	Input        string      // 1 to 4096 characters
	Voice        string      // empty means the engine's default voice
	Instructions string      // spoken as a bracketed direction
	References   []Reference // spoken before the voice's own references
	MaxFrames    int         // 0 uses the engine's limit
	// Stream asks the engine to stream PCM as it is made; otherwise the
	// engine makes the whole reply first. The audio is the same either way.
	Stream bool
	Speed  float64 // 0 or 1; engines refuse other speeds
	// Params are engine-specific settings, passed through unchanged.
	Params map[string]string
}

// AudioHeader describes the PCM that follows: always SampleRate, Channels
// and BitsPerSample little-endian today, stated so readers need not assume.
type AudioHeader struct {
	SampleRate    int
	Channels      int
	BitsPerSample int
	// LongFormSegments is the number of segments when the engine split the
	// text and knew it before the audio; 0 otherwise.
	LongFormSegments int
	// Sized is set when the engine knows, before its first chunk, exactly
	// how many samples follow and how the synthesis ends, as the native
	// server does for a whole reply (its WAV header and X-Finish-Reason
	// come before the audio). Samples, Reason and SegmentOffsets are then
	// what the stream will deliver and Final report (CheckEnd), so a whole
	// reply can go out with exact sizes as its audio arrives. Unset (a
	// stream, or a plugin older than the field), they are zero: the
	// length and the end are known only once the stream ends.
	Sized          bool
	Samples        int64
	Reason         FinishReason
	SegmentOffsets []int64
}

// CheckEnd returns nil when a synthesis that delivered samples and ended
// with f kept its sized header's word (or the header was not sized), and
// otherwise an engine failure naming what differs.
func (h AudioHeader) CheckEnd(samples int64, f Final) error {
	switch {
	case !h.Sized:
		return nil
	case samples != h.Samples:
		return Errorf(KindFailed, "synthesize: the engine sent %d samples after a header that said %d", samples, h.Samples)
	case f.Reason != h.Reason:
		return Errorf(KindFailed, "synthesize: the engine ended with finish reason %q after a header that said %q", f.Reason, h.Reason)
	case max(f.LongFormSegments, 1) != max(h.LongFormSegments, 1) || !slices.Equal(f.SegmentOffsets, h.SegmentOffsets):
		return Errorf(KindFailed, "synthesize: the engine ended with %d long-form segments at %v after a header that said %d at %v",
			f.LongFormSegments, f.SegmentOffsets, h.LongFormSegments, h.SegmentOffsets)
	}
	return nil
}

// FinishReason says why a synthesis ended.
type FinishReason int

// Finish reasons.
const (
	FinishUnknown FinishReason = iota
	FinishStop                 // the text was spoken to its end
	FinishLength               // clipped at the frame limit; the audio is kept
	FinishSilence              // ended after 10 s under -40 dBFS
)

var finishNames = [...]string{"", "stop", "length", "silence"}

// String returns the reason as the native contract spells it: stop, length
// or silence (empty when unknown).
func (r FinishReason) String() string {
	if r < 0 || int(r) >= len(finishNames) {
		return ""
	}
	return finishNames[r]
}

// ParseFinishReason reads stop, length or silence.
func ParseFinishReason(s string) (FinishReason, error) {
	for i, n := range finishNames {
		if i > 0 && n == s {
			return FinishReason(i), nil
		}
	}
	return FinishUnknown, Errorf(KindFailed, "finish reason: want stop, length or silence, got %q", s)
}

// Final is the end of a synthesis.
type Final struct {
	Reason FinishReason
	// LongFormSegments is the number of segments of a long-form synthesis
	// (1 or 0 when it was not split); SegmentOffsets are the sample offsets
	// at which segments 2..N begin, as the engine reported them.
	LongFormSegments int
	SegmentOffsets   []int64
	Samples          int64         // PCM samples sent
	FirstAudio       time.Duration // request to first audio in the engine
	Total            time.Duration // request to last audio in the engine
	BusyRetries      int           // busy answers retried inside the engine
}

// Clip is one recording to encode: a path on the plugin's host, or the bytes
// of a WAV file when Path is empty.
type Clip struct {
	ID   string
	Path string
	Data []byte
	Text string // its transcript, carried through to the result
}

// EncodeRequest is clips to turn into codes.
type EncodeRequest struct {
	Install
	Clips []Clip
	// Params are engine-specific settings, passed through unchanged.
	Params map[string]string
}

// EncodeProgress reports progress of an Encode.
type EncodeProgress struct {
	ClipID   string
	Index    int     // the clip's position in the request
	Count    int     // clips in the request
	Fraction float64 // of this clip, 0..1
	Stage    string
}

// EncodedClip is one clip's codes.
type EncodedClip struct {
	ClipID  string
	Text    string
	Codes   [][]int // codebook-major: NumCodebooks rows of Frames values
	Frames  int
	Samples int64 // PCM samples in the clip as encoded
}
