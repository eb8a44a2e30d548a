package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/voices"
)

// Limits on a speech request.
const (
	MaxInputRunes   = 4096    // input characters
	MaxBodyBytes    = 4 << 20 // a request body; references make it large
	maxJSONDepth    = 8
	maxInstructions = 500
)

// speechRequest is the body of POST /v1/audio/speech.
type speechRequest struct {
	Model          string          `json:"model"`
	Input          *string         `json:"input"`
	Voice          json.RawMessage `json:"voice"`
	Instructions   string          `json:"instructions"`
	ResponseFormat string          `json:"response_format"`
	Speed          *float64        `json:"speed"`
	StreamFormat   string          `json:"stream_format"`
	Stream         *bool           `json:"stream"`
	References     []struct {
		Text    string  `json:"text"`
		VQCodes [][]int `json:"vq_codes"`
	} `json:"references"`
	MaxFrames rawJSON `json:"max_frames"`
}

// rawJSON keeps a member's JSON text as sent, for a check of its own (a
// json.Number would accept "12" in quotes and lose how large it was).
type rawJSON string

// UnmarshalJSON implements json.Unmarshaler.
func (r *rawJSON) UnmarshalJSON(b []byte) error {
	*r = rawJSON(b)
	return nil
}

// speech is a checked request, ready for the engine.
type speech struct {
	engine.SynthesisRequest
	Format string // wav, pcm, mp3, opus, flac, aac
	SSE    bool
	// Whole sends one exactly sized reply once the synthesis is done: for
	// "stream": false and for HTTP/1.0 clients. Otherwise the reply is sent
	// as the engine makes it (chunked).
	Whole bool
	// PromptTokens is the prompt's length in tokens, when counted.
	PromptTokens int
	// SampleRate is the rate the reply is converted to (ffmpeg); 0 sends
	// the engine's own 44,100 Hz.
	SampleRate int
	// Bitrate is the encoder's bitrate ("128k"); empty takes the format's
	// default.
	Bitrate string
	// fields renames the request's fields in refusals, for a route whose
	// body names them otherwise (POST /v1/tts); nil for OpenAI's route.
	fields map[string]string
}

// refusal is e as the route the request came by answers it: on a route
// with fields of its own (POST /v1/tts), a refusal of the request (400)
// is a 422 naming the field as that route's body names it.
func (req *speech) refusal(e *apiError) *apiError {
	if req == nil || req.fields == nil || e.Status != 400 {
		return e
	}
	cp := *e
	cp.Status = 422
	if name, ok := req.fields[cp.Param]; ok {
		cp.Param, cp.Code = name, "invalid_"+strings.ReplaceAll(name, ".", "_")
	}
	return &cp
}

// rate is the sample rate of the reply's audio.
func (req *speech) rate() int {
	if req.SampleRate > 0 {
		return req.SampleRate
	}
	return engine.SampleRate
}

// parseSpeech decodes and checks a request body. Every refusal is a 400
// naming the field.
func (s *Server) parseSpeech(body []byte) (*speech, *apiError) {
	if e := checkSyntax(body, maxJSONDepth); e != nil {
		return nil, e
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var r speechRequest
	if err := dec.Decode(&r); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			field, _, _ := strings.Cut(te.Field, ".")
			return nil, badRequest(field, "%s: want a JSON %s, got %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
		}
		return nil, badRequest("", "request body is not a valid speech request: %v", err)
	}
	out := &speech{}
	for _, check := range []func(*speechRequest, *speech) *apiError{
		s.checkInput, s.checkVoice, s.checkInstructions, s.checkSpeed, s.checkFormat, s.checkReferences, s.checkMaxFrames,
	} {
		if e := check(&r, out); e != nil {
			return nil, e
		}
	}
	return out, nil
}

func (s *Server) checkInput(r *speechRequest, out *speech) *apiError {
	if r.Input == nil {
		return badRequest("input", "input is required: the text to speak, 1 to %d characters", MaxInputRunes)
	}
	n := utf8.RuneCountInString(*r.Input)
	switch {
	case strings.TrimSpace(*r.Input) == "":
		return badRequest("input", "input is empty: give 1 to %d characters of text", MaxInputRunes)
	case n > MaxInputRunes:
		return badRequest("input", "input is %d characters; the limit is %d: split the text into several requests", n, MaxInputRunes)
	}
	if e := checkControls("input", *r.Input); e != nil {
		return e
	}
	out.Input = *r.Input
	return nil
}

// checkVoice accepts "name" or {"id": "name"} and requires a known voice.
func (s *Server) checkVoice(r *speechRequest, out *speech) *apiError {
	id := ""
	if len(r.Voice) > 0 && string(r.Voice) != "null" {
		var obj struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(r.Voice, &id) != nil {
			if err := json.Unmarshal(r.Voice, &obj); err != nil || obj.ID == "" {
				return badRequest("voice", `voice must be a voice id string or {"id": "..."}`)
			}
			id = obj.ID
		}
	}
	if id != "" {
		v, e := s.resolveVoice(id)
		if e != nil {
			return e
		}
		id = v
	}
	out.Voice = id
	return nil
}

func (s *Server) checkInstructions(r *speechRequest, out *speech) *apiError {
	in := r.Instructions
	switch {
	case strings.ContainsAny(in, "[]"):
		return badRequest("instructions", "instructions must not contain [ or ]: they are spoken as one bracketed direction, e.g. \"whispering, nervous\"")
	case strings.ContainsAny(in, "\r\n"):
		return badRequest("instructions", "instructions must be one line")
	case strings.Contains(in, "<") && strings.Contains(in, ">"):
		return badRequest("instructions", "instructions must not contain tags")
	case utf8.RuneCountInString(in) > maxInstructions:
		return badRequest("instructions", "instructions are limited to %d characters", maxInstructions)
	}
	if e := checkControls("instructions", in); e != nil {
		return e
	}
	out.Instructions = strings.TrimSpace(in)
	return nil
}

func (s *Server) checkSpeed(r *speechRequest, out *speech) *apiError {
	if r.Speed != nil && *r.Speed != 1 {
		return badRequest("speed", "speed %v is not supported: Drama 3 speaks at speed 1 only (omit speed or send 1)", *r.Speed)
	}
	out.Speed = 1
	return nil
}

func (s *Server) checkFormat(r *speechRequest, out *speech) *apiError {
	format := r.ResponseFormat
	if format == "" {
		format = "wav"
	}
	switch format {
	case "wav", "pcm":
	case "mp3", "opus", "flac", "aac":
		if s.cfg.FFmpeg == "" {
			return badRequest("response_format", "response_format %q needs ffmpeg on the PATH; supported here: wav, pcm", format)
		}
	default:
		return badRequest("response_format", "unknown response_format %q: use wav or pcm (mp3, opus, flac, aac with ffmpeg)", format)
	}
	switch r.StreamFormat {
	case "", "audio":
	case "sse":
		out.SSE = true
	default:
		return badRequest("stream_format", "unknown stream_format %q: use audio or sse", r.StreamFormat)
	}
	if out.SSE && format != "pcm" && format != "wav" {
		return badRequest("stream_format", "stream_format sse carries PCM: use response_format pcm or wav")
	}
	out.Format = format
	out.Whole = r.Stream != nil && !*r.Stream && !out.SSE
	out.Stream = !out.Whole
	return nil
}

func (s *Server) checkReferences(r *speechRequest, out *speech) *apiError {
	if len(r.References) == 0 {
		return nil
	}
	if !s.capabilities().References {
		return badRequest("references", "this engine does not take references in a request: use a voice from GET /v1/voices")
	}
	v := &voices.Voice{Format: voices.FormatCUDA, ID: "request", Name: "request"}
	for _, ref := range r.References {
		v.References = append(v.References, voices.Reference{Text: ref.Text, Codes: voices.Codes(ref.VQCodes)})
	}
	if err := v.Validate(s.cfg.VoiceOptions); err != nil {
		return badRequest("references", "%v", err)
	}
	for _, ref := range v.References {
		out.References = append(out.References, engine.Reference{Text: ref.Text, Codes: ref.Codes})
	}
	return nil
}

func (s *Server) checkMaxFrames(r *speechRequest, out *speech) *apiError {
	if r.MaxFrames == "" || r.MaxFrames == "null" {
		return nil
	}
	if c := r.MaxFrames[0]; c != '-' && (c < '0' || c > '9') {
		return badRequest("max_frames", "max_frames must be a JSON number of frames, got %s", r.MaxFrames)
	}
	n, err := strconv.ParseInt(string(r.MaxFrames), 10, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return badRequest("max_frames", "max_frames %s is not a whole number of frames", r.MaxFrames)
	}
	limit := int64(s.capabilities().MaxFrames)
	if limit <= 0 {
		limit = math.MaxInt32 // what the engine protocol carries
	}
	switch {
	case n < 0 || strings.HasPrefix(string(r.MaxFrames), "-"):
		return badRequest("max_frames", "max_frames %s must be 0 (the engine's limit) or more", r.MaxFrames)
	case err != nil || n > limit:
		return badRequest("max_frames", "max_frames %s is over this engine's limit of %d frames", r.MaxFrames, limit)
	}
	out.MaxFrames = int(n)
	return nil
}

// checkControls refuses control characters other than tab and line breaks
// in a text field: the engine would speak them or stop at them.
func checkControls(field, s string) *apiError {
	for i, c := range s {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return badRequest(field, "%s holds the control character U+%04X at byte %d: remove it", field, c, i)
		}
	}
	return nil
}

func jsonKind(goKind string) string {
	switch {
	case strings.HasPrefix(goKind, "int"), strings.HasPrefix(goKind, "uint"), strings.HasPrefix(goKind, "float"):
		return "number"
	case goKind == "slice":
		return "array"
	case goKind == "struct", goKind == "map":
		return "object"
	case goKind == "ptr":
		return "value"
	}
	return goKind
}

// checkSyntax reads the body as strict JSON before it is decoded: one
// value, nested at most max deep, with valid UTF-8, no lone surrogates in
// escapes and no name twice in an object. Go's decoder would silently
// replace bad text, keep the last of two names and ignore what follows the
// value; each of those is a 400 naming the field instead.
func checkSyntax(body []byte, max int) *apiError {
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return syntaxError(err, body)
		}
		switch tok.Kind() {
		case '{', '[':
			if dec.StackDepth() > max {
				return badRequest(topField(dec.StackPointer()), "request body is nested deeper than %d levels", max)
			}
		}
		if dec.StackDepth() == 0 {
			break
		}
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return badRequest("", "request body holds more after its JSON object (at byte %d): send exactly one object", dec.InputOffset())
	}
	return nil
}

func syntaxError(err error, body []byte) *apiError {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return badRequest("", "request body is not valid JSON: it ends early (%d bytes)", len(body))
	}
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		return badRequest("", "request body is not valid JSON: %v", err)
	}
	field := topField(se.JSONPointer)
	where := "request body"
	if se.JSONPointer != "" {
		where = strings.TrimPrefix(string(se.JSONPointer), "/")
		where = strings.ReplaceAll(where, "/", ".")
	}
	msg := se.Err.Error()
	switch {
	case strings.Contains(msg, "duplicate"):
		return badRequest(field, "%s: the name appears twice in one object: send it once", where)
	case strings.Contains(msg, "invalid UTF-8"):
		return badRequest(field, "%s: invalid UTF-8 at byte %d: send text as UTF-8", where, se.ByteOffset)
	case strings.Contains(msg, "surrogate"):
		return badRequest(field, "%s: a lone UTF-16 surrogate escape at byte %d: escape a character outside the BMP as a surrogate pair, or send it as UTF-8", where, se.ByteOffset)
	}
	return badRequest(field, "request body is not valid JSON: %s at byte %d", msg, se.ByteOffset)
}

// topField is the top-level member a JSON pointer is in ("" for none).
func topField(p jsontext.Pointer) string {
	field, _, _ := strings.Cut(strings.TrimPrefix(string(p), "/"), "/")
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(field)
}
