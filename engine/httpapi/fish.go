package httpapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"

	"github.com/drama-tts/drama/engine"
)

// MaxFishBodyBytes bounds a POST /v1/tts body: its inline references
// (recordings) make it larger than an OpenAI request.
const MaxFishBodyBytes = 32 << 20

// fishFields names, in refusals of POST /v1/tts, the fields of OpenAI's
// request that the speech checks speak of, as Fish Audio's body names them.
var fishFields = map[string]string{
	"input": "text", "voice": "reference_id", "speed": "prosody.speed", "response_format": "format",
	"max_frames": "max_new_tokens", "references": "references", "clip": "references", "": "",
}

// Fish Audio's formats, sample rates and bitrates.
var (
	fishFormats      = []string{"wav", "pcm", "mp3", "opus"}
	fishSampleRates  = []int64{8000, 16000, 22050, 24000, 32000, 44100, 48000}
	fishOpusRates    = []int64{8000, 12000, 16000, 24000, 48000}
	fishMP3Bitrates  = []int64{64, 128, 192}
	fishOpusBitrates = []int64{-1000, 24, 32, 48, 64}
	fishLatencies    = []string{"normal", "balanced"}
)

// fishTTS is a POST /v1/tts body as Fish Audio's API defines it (msgpack
// or JSON), every member optional but text.
type fishTTS struct {
	Text         *string
	ReferenceID  *string
	References   []fishReference
	Format       *string
	SampleRate   *int64
	MP3Bitrate   *int64
	OpusBitrate  *int64
	Speed        *float64 // prosody.speed
	Volume       *float64 // prosody.volume
	Latency      *string
	ChunkLength  *int64
	MaxNewTokens *int64
	// Unapplied are the tuning members given that drama takes and does
	// not apply (its engine samples as it was started to).
	Unapplied []string
}

// fishReference is one inline reference: a recording and its words.
type fishReference struct {
	Audio []byte
	Text  string
}

// fishTuning are members that tune Fish's own model and have no
// counterpart in drama: taken when well formed, not applied, and named in
// the reply's X-Drama-Unapplied. normalize and chunk_length are among
// them: drama speaks the text as given, and splits long text as drama
// serve was started to (--long-form-chars).
var fishTuning = map[string]string{
	"temperature": "number", "top_p": "number", "repetition_penalty": "number", "normalize": "bool",
	"early_stop_threshold": "number", "condition_on_previous_chunks": "bool", "min_chunk_length": "int",
	"seed": "int", "use_memory_cache": "string", "streaming": "bool",
}

// fishRefused returns a POST /v1/tts refusal: a 422 naming the field.
func fishRefused(field, format string, args ...any) *apiError {
	code := "invalid_request"
	if field != "" {
		code = "invalid_" + strings.ReplaceAll(field, ".", "_")
	}
	return &apiError{Status: http.StatusUnprocessableEntity, Type: "invalid_request_error", Param: field, Code: code, Message: fmt.Sprintf(format, args...)}
}

// handleTTS is Fish Audio's POST /v1/tts: the body (msgpack or JSON) made
// into a speech request and spoken as POST /v1/audio/speech speaks,
// streamed from the first audio.
func (s *Server) handleTTS(w http.ResponseWriter, r *http.Request) {
	rec := &Recorder{ResponseWriter: w}
	start := time.Now()
	defer func() { s.metrics.observeRequest(rec.Status()) }()
	if e := s.notQualified(); e != nil {
		writeError(rec, e)
		return
	}
	t, e := readFish(rec, r)
	if e != nil {
		writeError(rec, e)
		return
	}
	req, e := s.fishSpeech(r, t)
	if e != nil {
		writeError(rec, e)
		return
	}
	if len(t.Unapplied) > 0 {
		rec.Header().Set("X-Drama-Unapplied", strings.Join(t.Unapplied, ", "))
	}
	s.speak(rec, r, req, start)
}

// readFish reads and decodes a POST /v1/tts body by its Content-Type.
func readFish(w http.ResponseWriter, r *http.Request) (*fishTTS, *apiError) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "application/msgpack" && mt != "application/x-msgpack" && mt != "application/json" {
		return nil, &apiError{Status: http.StatusUnsupportedMediaType, Type: "invalid_request_error", Code: "unsupported_media_type",
			Message: "send the request as msgpack (Content-Type: application/msgpack) or JSON (Content-Type: application/json)"}
	}
	body, e := readBody(w, r, MaxFishBodyBytes, "send shorter reference recordings, or clone the voice once (POST /model) and name it in reference_id")
	if e != nil {
		return nil, e
	}
	if mt == "application/json" {
		return decodeFishJSON(body)
	}
	return decodeFishMsgpack(body)
}

// fishSpeech checks a Fish request and makes it a speech request, through
// the checks POST /v1/audio/speech makes (refusals renamed for Fish's
// fields, as 422s), and the inline references cloned or found cached.
func (s *Server) fishSpeech(r *http.Request, t *fishTTS) (*speech, *apiError) {
	out := &speech{fields: fishFields}
	sr := &speechRequest{Input: t.Text, Speed: t.Speed}
	if t.Text == nil {
		return nil, fishRefused("text", "text is required: the words to speak, 1 to %d characters", MaxInputRunes)
	}
	format := "mp3" // Fish's default
	if t.Format != nil {
		format = *t.Format
		if !slices.Contains(fishFormats, format) {
			return nil, fishRefused("format", "unknown format %q: use wav, pcm, mp3 or opus", format)
		}
	}
	sr.ResponseFormat = format
	for _, check := range []func(*speechRequest, *speech) *apiError{s.checkInput, s.checkSpeed, s.checkFormat} {
		if e := check(sr, out); e != nil {
			return nil, out.refusal(e)
		}
	}
	if t.Volume != nil && *t.Volume != 0 {
		return nil, fishRefused("prosody.volume", "prosody.volume %v is not supported: drama speaks at the model's own level (omit it or send 0, and set the volume where the audio is played)", *t.Volume)
	}
	if e := s.fishRate(t, out); e != nil {
		return nil, e
	}
	if e := fishBitrate(t, out); e != nil {
		return nil, e
	}
	if t.Latency != nil && !slices.Contains(fishLatencies, *t.Latency) {
		return nil, fishRefused("latency", "unknown latency %q: use normal or balanced (drama streams from the first audio either way)", *t.Latency)
	}
	if t.ChunkLength != nil && (*t.ChunkLength < 100 || *t.ChunkLength > 300) {
		return nil, fishRefused("chunk_length", "chunk_length %d is out of range: 100 to 300 (drama splits long text as drama serve was started to: --long-form-chars)", *t.ChunkLength)
	}
	if t.MaxNewTokens != nil && *t.MaxNewTokens != 0 {
		sr.MaxFrames = rawJSON(strconv.FormatInt(*t.MaxNewTokens, 10))
		if e := s.checkMaxFrames(sr, out); e != nil {
			return nil, out.refusal(e)
		}
	}
	if t.ReferenceID != nil && *t.ReferenceID != "" {
		id, e := s.resolveVoice(*t.ReferenceID)
		if e != nil {
			return nil, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "reference_id", Code: "voice_not_found",
				Message: fmt.Sprintf("no voice %q: reference_id names a voice of GET /model (or GET /v1/voices)", *t.ReferenceID)}
		}
		out.Voice = id
	}
	if len(t.References) > 0 {
		refs, e := s.fishReferences(r, t.References)
		if e != nil {
			return nil, e
		}
		out.References = refs
	}
	return out, nil
}

// fishRate takes sample_rate: the engine's 44,100 Hz as it is, another
// of Fish's rates converted by ffmpeg when drama serve has it.
func (s *Server) fishRate(t *fishTTS, out *speech) *apiError {
	if t.SampleRate == nil || *t.SampleRate == engine.SampleRate && out.Format != "opus" {
		return nil
	}
	rate := *t.SampleRate
	rates := fishSampleRates
	if out.Format == "opus" {
		rates = fishOpusRates // the rates Opus is coded at; it decodes at 48,000 Hz
	}
	if !slices.Contains(rates, rate) {
		return fishRefused("sample_rate", "sample_rate %d is not offered for %s: use one of %s (or omit it: %d Hz, the model's own)", rate, out.Format, joinInts(rates), engine.SampleRate)
	}
	if s.cfg.FFmpeg == "" {
		return fishRefused("sample_rate", "sample_rate %d needs ffmpeg on drama serve's PATH to convert the model's %d Hz: omit sample_rate or send %d", rate, engine.SampleRate, engine.SampleRate)
	}
	out.SampleRate = int(rate)
	return nil
}

// fishBitrate takes mp3_bitrate and opus_bitrate (-1000: the encoder's
// choice).
func fishBitrate(t *fishTTS, out *speech) *apiError {
	if b := t.MP3Bitrate; b != nil {
		if !slices.Contains(fishMP3Bitrates, *b) {
			return fishRefused("mp3_bitrate", "mp3_bitrate %d: use one of %s (kbit/s)", *b, joinInts(fishMP3Bitrates))
		}
		if out.Format == "mp3" {
			out.Bitrate = fmt.Sprintf("%dk", *b)
		}
	}
	if b := t.OpusBitrate; b != nil {
		if !slices.Contains(fishOpusBitrates, *b) {
			return fishRefused("opus_bitrate", "opus_bitrate %d: use one of %s (kbit/s; -1000: the encoder's choice)", *b, joinInts(fishOpusBitrates))
		}
		if out.Format == "opus" && *b > 0 {
			out.Bitrate = fmt.Sprintf("%dk", *b)
		}
	}
	return nil
}

func joinInts(v []int64) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(s, ", ")
}

// decodeFishMsgpack reads a msgpack body member by member, each by the
// type its member takes. It never skips or decodes a value generically:
// an unknown member is refused, not walked, so nesting costs nothing.
func decodeFishMsgpack(body []byte) (*fishTTS, *apiError) {
	d := mpReader{msgpack.NewDecoder(bytes.NewReader(body))}
	t, e := d.request("")
	if e != nil {
		return nil, e
	}
	if _, err := d.d.PeekCode(); !errors.Is(err, io.EOF) {
		return nil, fishRefused("", "the body holds more after its msgpack map: send exactly one map")
	}
	return t, nil
}

// request decodes a request's map (the body, or a live session's start
// event's request, named in messages by field).
func (m mpReader) request(field string) (*fishTTS, *apiError) {
	n, e := m.mapLen(field)
	if e != nil {
		return nil, fishRefused(field, "%s is not a msgpack map of the request's fields", cmp.Or(field, "the body"))
	}
	t := &fishTTS{}
	seen := map[string]bool{}
	for range n {
		key, err := m.d.DecodeString()
		if err != nil {
			return nil, fishRefused(field, "a map key that is not a string: %v", err)
		}
		if seen[key] {
			return nil, fishRefused(key, "%s appears twice: send it once", key)
		}
		seen[key] = true
		if m.null() {
			continue
		}
		if e := m.member(t, key); e != nil {
			return nil, e
		}
	}
	return t, nil
}

// mpReader decodes msgpack values of a given type, naming the field when
// a value has another.
type mpReader struct{ d *msgpack.Decoder }

func (m mpReader) code() byte {
	c, err := m.d.PeekCode()
	if err != nil {
		return msgpcode.Nil - 1 // never a value's code here: "the body ends"
	}
	return c
}

func (m mpReader) null() bool {
	if m.code() == msgpcode.Nil {
		_ = m.d.DecodeNil()
		return true
	}
	return false
}

func mpWant(field, want string) *apiError {
	return fishRefused(field, "%s: want %s", field, want)
}

func (m mpReader) str(field string) (string, *apiError) {
	if !msgpcode.IsString(m.code()) {
		return "", mpWant(field, "a string")
	}
	s, err := m.d.DecodeString()
	if err != nil {
		return "", fishRefused(field, "%s: %v", field, err)
	}
	return s, nil
}

func isNumber(c byte) bool {
	return msgpcode.IsFixedNum(c) || c >= msgpcode.Float && c <= msgpcode.Int64
}

func (m mpReader) num(field string) (float64, *apiError) {
	if !isNumber(m.code()) {
		return 0, mpWant(field, "a number")
	}
	f, err := m.d.DecodeFloat64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fishRefused(field, "%s: want a finite number", field)
	}
	return f, nil
}

func (m mpReader) integer(field string) (int64, *apiError) {
	f, e := m.num(field)
	if e != nil {
		return 0, e
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, fishRefused(field, "%s: want a whole number, got %v", field, f)
	}
	return int64(f), nil
}

func (m mpReader) boolean(field string) (bool, *apiError) {
	if c := m.code(); c != msgpcode.True && c != msgpcode.False {
		return false, mpWant(field, "true or false")
	}
	b, _ := m.d.DecodeBool()
	return b, nil
}

func (m mpReader) binary(field string) ([]byte, *apiError) {
	if c := m.code(); !msgpcode.IsBin(c) && !msgpcode.IsString(c) {
		return nil, mpWant(field, "bytes (the recording)")
	}
	b, err := m.d.DecodeBytes()
	if err != nil {
		return nil, fishRefused(field, "%s: %v", field, err)
	}
	return b, nil
}

func (m mpReader) mapLen(field string) (int, *apiError) {
	if c := m.code(); !msgpcode.IsFixedMap(c) && c != msgpcode.Map16 && c != msgpcode.Map32 {
		return 0, mpWant(field, "a map")
	}
	n, err := m.d.DecodeMapLen()
	if err != nil {
		return 0, fishRefused(field, "%s: %v", field, err)
	}
	return n, nil
}

func (m mpReader) arrayLen(field string) (int, *apiError) {
	if c := m.code(); !msgpcode.IsFixedArray(c) && c != msgpcode.Array16 && c != msgpcode.Array32 {
		return 0, mpWant(field, "an array")
	}
	n, err := m.d.DecodeArrayLen()
	if err != nil {
		return 0, fishRefused(field, "%s: %v", field, err)
	}
	return n, nil
}

// member decodes the request's member key into t.
func (m mpReader) member(t *fishTTS, key string) *apiError {
	var e *apiError
	str := func(p **string) {
		var s string
		if s, e = m.str(key); e == nil {
			*p = &s
		}
	}
	integer := func(p **int64) {
		var n int64
		if n, e = m.integer(key); e == nil {
			*p = &n
		}
	}
	switch key {
	case "text":
		str(&t.Text)
	case "reference_id":
		str(&t.ReferenceID)
	case "format":
		str(&t.Format)
	case "latency":
		str(&t.Latency)
	case "sample_rate":
		integer(&t.SampleRate)
	case "mp3_bitrate":
		integer(&t.MP3Bitrate)
	case "opus_bitrate":
		integer(&t.OpusBitrate)
	case "chunk_length":
		integer(&t.ChunkLength)
	case "max_new_tokens":
		integer(&t.MaxNewTokens)
	case "prosody":
		e = m.prosody(t)
	case "references":
		e = m.references(t)
	default:
		kind, ok := fishTuning[key]
		if !ok {
			return fishRefused(key, "unknown field %q: docs/fish-api.md lists the fields drama serve takes", key)
		}
		switch kind {
		case "number":
			_, e = m.num(key)
		case "int":
			_, e = m.integer(key)
		case "bool":
			_, e = m.boolean(key)
		default:
			_, e = m.str(key)
		}
		t.Unapplied = append(t.Unapplied, key)
	}
	return e
}

func (m mpReader) prosody(t *fishTTS) *apiError {
	n, e := m.mapLen("prosody")
	if e != nil {
		return e
	}
	for range n {
		key, err := m.d.DecodeString()
		if err != nil {
			return fishRefused("prosody", "prosody: a key that is not a string")
		}
		field := "prosody." + key
		if m.null() {
			continue
		}
		var f float64
		switch key {
		case "speed":
			f, e = m.num(field)
			t.Speed = &f
		case "volume":
			f, e = m.num(field)
			t.Volume = &f
		default:
			return fishRefused(field, "unknown field %s: prosody takes speed and volume", field)
		}
		if e != nil {
			return e
		}
	}
	return nil
}

func (m mpReader) references(t *fishTTS) *apiError {
	n, e := m.arrayLen("references")
	if e != nil {
		return e
	}
	for i := range n {
		field := fmt.Sprintf("references[%d]", i)
		k, e := m.mapLen(field)
		if e != nil {
			return e
		}
		var ref fishReference
		for range k {
			key, err := m.d.DecodeString()
			if err != nil {
				return fishRefused("references", "%s: a key that is not a string", field)
			}
			switch key {
			case "audio":
				ref.Audio, e = m.binary(field + ".audio")
			case "text":
				ref.Text, e = m.str(field + ".text")
			default:
				return fishRefused("references", "%s: unknown field %q: a reference is {audio, text}", field, key)
			}
			if e != nil {
				e.Param = "references"
				return e
			}
		}
		t.References = append(t.References, ref)
	}
	return nil
}

// decodeFishJSON reads a JSON body: strict JSON (checkSyntax), each
// member decoded strictly into its type and refused by its name.
func decodeFishJSON(body []byte) (*fishTTS, *apiError) {
	if e := checkSyntax(body, maxJSONDepth); e != nil {
		return nil, (&speech{fields: fishFields}).refusal(e)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil {
		return nil, fishRefused("", "the body is not a JSON object of the request's fields")
	}
	t := &fishTTS{}
	var prosody struct {
		Speed  *float64 `json:"speed"`
		Volume *float64 `json:"volume"`
	}
	var refs []struct {
		Audio []byte `json:"audio"` // base64
		Text  string `json:"text"`
	}
	targets := map[string]any{
		"text": &t.Text, "reference_id": &t.ReferenceID, "format": &t.Format, "latency": &t.Latency,
		"sample_rate": &t.SampleRate, "mp3_bitrate": &t.MP3Bitrate, "opus_bitrate": &t.OpusBitrate,
		"chunk_length": &t.ChunkLength, "max_new_tokens": &t.MaxNewTokens, "prosody": &prosody, "references": &refs,
	}
	want := map[string]string{"number": "number", "int": "whole number", "bool": "boolean", "string": "string"}
	for k, v := range members {
		target, ok := targets[k]
		if !ok {
			kind, tuning := fishTuning[k]
			if !tuning {
				return nil, fishRefused(k, "unknown field %q: docs/fish-api.md lists the fields drama serve takes", k)
			}
			switch kind {
			case "number":
				target = new(*float64)
			case "int":
				target = new(*int64)
			case "bool":
				target = new(*bool)
			default:
				target = new(*string)
			}
			if string(v) != "null" {
				t.Unapplied = append(t.Unapplied, k)
			}
			if json.Unmarshal(v, target) != nil {
				return nil, fishRefused(k, "%s: want a JSON %s", k, want[kind])
			}
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(target); err != nil {
			var te *json.UnmarshalTypeError
			switch {
			case errors.As(err, &te) && te.Field != "":
				return nil, fishRefused(k, "%s.%s: want a JSON %s, got %s", k, te.Field, jsonKind(te.Type.Kind().String()), te.Value)
			case errors.As(err, &te):
				return nil, fishRefused(k, "%s: want a JSON %s, got %s", k, jsonKind(te.Type.Kind().String()), te.Value)
			}
			return nil, fishRefused(k, "%s: %v (prosody takes speed and volume; a reference is {audio: base64, text})", k, err)
		}
	}
	slices.Sort(t.Unapplied)
	t.Speed, t.Volume = prosody.Speed, prosody.Volume
	for _, r := range refs {
		t.References = append(t.References, fishReference{Audio: r.Audio, Text: r.Text})
	}
	return t, nil
}
