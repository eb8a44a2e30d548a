package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/voices/transcribe"
)

// WERSummary is the word error rate of the warm whole replies as a
// transcription server heard them: over all of them, by voice and by text,
// each errors over words pooled over the replies (not a mean of rates).
type WERSummary struct {
	// Transcriber is the transcription server's address.
	Transcriber string                 `json:"transcriber"`
	All         WERFigures             `json:"all"`
	ByVoice     map[string]*WERFigures `json:"by_voice"`
	ByText      map[string]*WERFigures `json:"by_text"`
	// Untranscribed counts the warm whole replies the server did not
	// transcribe (it answered an error): they are left out of the figures.
	Untranscribed int `json:"untranscribed"`
}

// WERFigures are the word error rate of a set of replies.
type WERFigures struct {
	Replies int `json:"replies"`
	// Words counts the reference words of the replies, Errors the
	// substitutions, deletions and insertions of their transcripts.
	Words  int     `json:"words"`
	Errors int     `json:"errors"`
	Rate   float64 `json:"rate"` // Errors over Words: 0.0131 is 1.31 %
	// PassRates is the rate of each warm pass on its own, in pass order:
	// the spread Compare weighs a difference against.
	PassRates []float64 `json:"pass_rates,omitempty"`
}

// Score returns the figures' errors and words.
func (f *WERFigures) Score() transcribe.Score {
	return transcribe.Score{Words: f.Words, Errors: f.Errors}
}

// TranscriberName is how a report names a transcription server: its
// transcriptions address without any user name or password in the URL.
func TranscriberName(server string) string {
	e, err := transcribe.Endpoint(server)
	if err != nil {
		return server
	}
	if u, err := url.Parse(e); err == nil {
		u.User = nil
		return u.String()
	}
	return e
}

// transcribeReply sends the samples of a warm whole reply to the
// transcriber as a WAV and scores the words heard against the text spoken.
// A server that heard no words gives an empty transcript (every word
// missed); a server that answered an error is recorded in the request; a
// server that could not be reached ends the run.
func transcribeReply(ctx context.Context, tc *transcribe.Client, r *Request, text string, pcm []byte) error {
	name := fmt.Sprintf("%s-%s-warm%d.wav", r.TextID, VoiceLabel(r.Voice), r.Index)
	wav := append(native.WAVHeader(len(pcm)), pcm...)
	heard, err := tc.Transcribe(ctx, name, bytes.NewReader(wav))
	var te *transcribe.Error
	switch {
	case errors.Is(err, transcribe.ErrNoSpeech):
		heard = ""
	case errors.As(err, &te) && te.Status != 0:
		r.TranscribeError = err.Error()
		return nil
	case err != nil:
		return fmt.Errorf("bench: transcribing %s (%s warm pass %d): %w", r.TextID, VoiceLabel(r.Voice), r.Index, err)
	}
	s := transcribe.WER(text, heard)
	r.Transcript, r.WER = &heard, &s
	return nil
}

// summarizeWER sets r.Summary.WER from the warm whole replies' scores;
// nil when the run had no transcriber.
func (r *Report) summarizeWER() {
	if r.Transcriber == "" {
		r.Summary.WER = nil
		return
	}
	w := &WERSummary{Transcriber: r.Transcriber, ByVoice: map[string]*WERFigures{}, ByText: map[string]*WERFigures{}}
	passes := r.Schedule.Passes
	// byPass holds each set's scores per warm pass, for its PassRates.
	byPass := map[*WERFigures][]transcribe.Score{}
	in := func(m map[string]*WERFigures, key string) *WERFigures {
		if m[key] == nil {
			m[key] = &WERFigures{}
		}
		return m[key]
	}
	for _, q := range r.Requests {
		if q.Pass != "warm" || q.Mode != Whole || !q.Valid() {
			continue
		}
		if q.WER == nil {
			w.Untranscribed++
			continue
		}
		for _, f := range []*WERFigures{&w.All, in(w.ByVoice, VoiceLabel(q.Voice)), in(w.ByText, q.TextID)} {
			f.Replies++
			f.Words += q.WER.Words
			f.Errors += q.WER.Errors
			if byPass[f] == nil {
				byPass[f] = make([]transcribe.Score, passes)
			}
			if q.Index >= 1 && q.Index <= passes {
				byPass[f][q.Index-1] = byPass[f][q.Index-1].Add(*q.WER)
			}
		}
	}
	for f, scores := range byPass {
		f.Rate = f.Score().Rate()
		for _, s := range scores {
			if s.Words > 0 || s.Errors > 0 {
				f.PassRates = append(f.PassRates, s.Rate())
			}
		}
	}
	r.Summary.WER = w
}

// WERRow is one line of the word error rate table.
type WERRow struct {
	Group string // "all", "voice X" or "text tNN"
	WERFigures
}

// WERRows lists the word error rates as table rows: all replies, by voice
// when there are several, then by text in corpus order; nil when the run
// had no transcriber.
func (r *Report) WERRows() []WERRow {
	w := r.Summary.WER
	if w == nil {
		return nil
	}
	rows := []WERRow{{"all", w.All}}
	var vs []string
	for v := range w.ByVoice {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	if len(vs) > 1 {
		for _, v := range vs {
			rows = append(rows, WERRow{"voice " + v, *w.ByVoice[v]})
		}
	}
	for _, t := range r.Corpus.Texts {
		if f := w.ByText[t.ID]; f != nil {
			rows = append(rows, WERRow{"text " + t.ID, *f})
		}
	}
	return rows
}

// Percent writes a word error rate as a percentage: "1.31 %".
func Percent(rate float64) string {
	return strings.TrimSpace(fmt.Sprintf("%.2f %%", 100*rate))
}
