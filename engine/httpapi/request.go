package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

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
	Stream         bool            `json:"stream"`
	References     []struct {
		Text    string  `json:"text"`
		VQCodes [][]int `json:"vq_codes"`
	} `json:"references"`
	MaxFrames int `json:"max_frames"`
}

// speech is a checked request, ready for the engine.
type speech struct {
	engine.SynthesisRequest
	Format string // wav, pcm, mp3, opus, flac, aac
	SSE    bool
}

// parseSpeech decodes and checks a request body. Every refusal is a 400
// naming the field.
func parseSpeech(body []byte, s *Server) (*speech, *apiError) {
	if err := checkDepth(body, maxJSONDepth); err != nil {
		return nil, badRequest("", "%v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var r speechRequest
	if err := dec.Decode(&r); err != nil {
		return nil, badRequest("", "request body is not a valid speech request: %v", err)
	}
	out := &speech{}
	for _, check := range []func(*speechRequest, *speech, *Server) *apiError{
		checkInput, checkVoice, checkInstructions, checkSpeed, checkFormat, checkReferences, checkMaxFrames,
	} {
		if e := check(&r, out, s); e != nil {
			return nil, e
		}
	}
	return out, nil
}

func checkInput(r *speechRequest, out *speech, _ *Server) *apiError {
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
	out.Input = *r.Input
	return nil
}

// checkVoice accepts "name" or {"id": "name"} and requires a known voice.
func checkVoice(r *speechRequest, out *speech, s *Server) *apiError {
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
	if id != "" && !s.knownVoice(id) {
		return badRequest("voice", "unknown voice %q: GET /v1/voices lists the voices served", id)
	}
	out.Voice = id
	return nil
}

func checkInstructions(r *speechRequest, out *speech, _ *Server) *apiError {
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
	out.Instructions = strings.TrimSpace(in)
	return nil
}

func checkSpeed(r *speechRequest, out *speech, _ *Server) *apiError {
	if r.Speed != nil && *r.Speed != 1 {
		return badRequest("speed", "speed %v is not supported: Drama 3 speaks at speed 1 only (omit speed or send 1)", *r.Speed)
	}
	out.Speed = 1
	return nil
}

func checkFormat(r *speechRequest, out *speech, s *Server) *apiError {
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
	out.Stream = r.Stream || out.SSE
	return nil
}

func checkReferences(r *speechRequest, out *speech, s *Server) *apiError {
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

func checkMaxFrames(r *speechRequest, out *speech, s *Server) *apiError {
	limit := s.capabilities().MaxFrames
	switch {
	case r.MaxFrames < 0:
		return badRequest("max_frames", "max_frames must be positive")
	case limit > 0 && r.MaxFrames > limit:
		return badRequest("max_frames", "max_frames %d is over this engine's limit of %d", r.MaxFrames, limit)
	}
	out.MaxFrames = r.MaxFrames
	return nil
}

// checkDepth refuses JSON nested deeper than max, before decoding it.
func checkDepth(body []byte, max int) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	depth := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("request body is not valid JSON: %v", err)
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if depth++; depth > max {
				return fmt.Errorf("request body is nested deeper than %d levels", max)
			}
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}
