package qualify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"syscall"
	"unicode/utf8"

	"github.com/drama-tts/drama/engine/bench"
	"github.com/drama-tts/drama/internal/proc"
)

// Sentence is the sentence the end-to-end steps speak whole, again warm,
// and streamed.
const Sentence = "[sighs] Well, here we are again, and the kettle is already on."

// Paragraph is the 300-character paragraph spoken whole and streamed.
const Paragraph = "The lighthouse keeper climbed the stairs each evening at dusk. " +
	"He wiped the great lens, trimmed the wick, and [laughs] talked to the gulls as if they were old friends. " +
	"When the fog rolled in, he rang the bell each minute until morning, " +
	"and no ship was lost on his rocks in forty years of close watch."

// E2EConfig says what the end-to-end steps speak to.
type E2EConfig struct {
	Client *bench.Client
	// Voices are the voices to speak once each; nil: every voice GET
	// /v1/voices lists.
	Voices []string
	// References, when not empty, are sent inline with the sentence
	// (a voice file's references); ReferencesFrom names their file.
	References     []Reference
	ReferencesFrom string
}

// Reference is one inline reference of a request: a clip's transcript and
// its codes, codebook-major (10 rows of frames).
type Reference struct {
	Text    string  `json:"text"`
	VQCodes [][]int `json:"vq_codes"`
}

// E2E runs the end-to-end steps against a freshly started, ready drama
// serve: the sentence whole, again (byte-identical), streamed (the same
// samples); the paragraph whole and streamed (equal); each served voice;
// an unknown voice refused with 400. A transport failure ends the steps
// with an error.
func E2E(ctx context.Context, cfg E2EConfig) ([]Result, error) {
	c := cfg.Client
	var out []Result
	speak := func(text, voice, mode string) (*bench.SpeakResult, error) { return c.Speak(ctx, text, voice, mode) }

	first, err := speak(Sentence, "", bench.Whole)
	if err != nil {
		return out, err
	}
	out = append(out, validStep("sentence whole", first))
	again, err := speak(Sentence, "", bench.Whole)
	if err != nil {
		return out, err
	}
	out = append(out, sameStep("sentence warm, byte-identical", first, again))
	streamed, err := speak(Sentence, "", bench.Streamed)
	if err != nil {
		return out, err
	}
	out = append(out, sameStep("sentence streamed, same samples", first, streamed))

	pw, err := speak(Paragraph, "", bench.Whole)
	if err != nil {
		return out, err
	}
	ps, err := speak(Paragraph, "", bench.Streamed)
	if err != nil {
		return out, err
	}
	step := sameStep(fmt.Sprintf("%d-character paragraph, whole and streamed equal", utf8.RuneCountInString(Paragraph)), pw, ps)
	if step.Pass {
		step.Detail += fmt.Sprintf("; warm RTF %.3f whole, %.3f streamed", pw.RTF, ps.RTF)
		step.Value = pw.RTF
	}
	out = append(out, step)

	voices := cfg.Voices
	if voices == nil {
		if voices, err = c.Voices(ctx); err != nil {
			return out, err
		}
	}
	for _, v := range voices {
		r, err := speak(Sentence, v, bench.Whole)
		if err != nil {
			return out, err
		}
		out = append(out, validStep("voice "+v, r))
	}

	if len(cfg.References) > 0 {
		r, err := c.SpeakJSON(ctx, map[string]any{"input": Sentence, "references": cfg.References, "response_format": "wav", "stream": false}, bench.Whole)
		if err != nil {
			return out, err
		}
		out = append(out, validStep(fmt.Sprintf("inline references (%d from %s)", len(cfg.References), cfg.ReferencesFrom), r))
	}

	unknown := "no-such-voice-qualify"
	r, err := speak(Sentence, unknown, bench.Whole)
	if err != nil {
		return out, err
	}
	res := Result{Name: "unknown voice refused", Pass: r.Status == http.StatusBadRequest, Value: float64(r.Status)}
	res.Detail = fmt.Sprintf("voice %q: status %d, want 400", unknown, r.Status)
	out = append(out, res)
	return out, nil
}

func validStep(name string, r *bench.SpeakResult) Result {
	if !r.Valid() {
		return Result{Name: name, Detail: r.Error}
	}
	return Result{Name: name, Pass: true, Value: r.RTF,
		Detail: fmt.Sprintf("%.2f s of audio in %.3f s, finish reason %s", r.AudioSeconds, r.Total, r.FinishReason)}
}

// sameStep passes when both replies are valid and carry the same samples.
func sameStep(name string, a, b *bench.SpeakResult) Result {
	switch {
	case !a.Valid():
		return Result{Name: name, Detail: a.Error}
	case !b.Valid():
		return Result{Name: name, Detail: b.Error}
	case a.PCMSHA256 != b.PCMSHA256:
		return Result{Name: name, Detail: fmt.Sprintf("the replies differ: %d bytes of audio (sha256 %s) against %d (sha256 %s); the engine must give the same audio for the same text and voice",
			len(a.PCM), a.PCMSHA256[:12], len(b.PCM), b.PCMSHA256[:12])}
	}
	return Result{Name: name, Pass: true, Detail: fmt.Sprintf("%d bytes of audio, sha256 %s", len(a.PCM), a.PCMSHA256[:12])}
}

// DefaultMemoryTolerance is how far MemAvailable may stay below its
// baseline once the server has stopped.
const DefaultMemoryTolerance = 2 << 30

// CheckStopped checks that the processes of a stopped server are gone and
// that MemAvailable came back within tolerance of the baseline read
// before the load (baseline < 0: not checked).
func CheckStopped(pids []int, baseline, tolerance int64) Result {
	var left []string
	for _, p := range pids {
		if alive(p) {
			left = append(left, strconv.Itoa(p))
		}
	}
	if len(left) > 0 {
		return Result{Name: "stopped", Detail: fmt.Sprintf("processes left running after the stop: %v", left)}
	}
	res := Result{Name: "stopped", Pass: true, Detail: fmt.Sprintf("all %d processes gone", len(pids))}
	if now := bench.MemAvailable(); baseline >= 0 && now >= 0 {
		drop := baseline - now
		res.Value = float64(drop)
		if drop > tolerance {
			res.Pass = false
			res.Detail = fmt.Sprintf("MemAvailable is %s below its level before the load; want within %s", gib(drop), gib(tolerance))
		} else {
			res.Detail += fmt.Sprintf("; MemAvailable back within %s of its level before the load", gib(tolerance))
		}
	}
	return res
}

// alive reports whether pid runs and is no zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && err != syscall.EPERM {
		return false
	}
	if !proc.Mounted() {
		return true // no /proc: the signal's answer is all there is
	}
	st, err := proc.Read(pid)
	return errors.Is(err, proc.ErrFormat) || (err == nil && !st.Exited())
}
