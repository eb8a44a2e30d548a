package voicecmd

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/internal/safetext"
	"github.com/drama-tts/drama/voices"
)

// fileReport is what check, show and list learn about one voice file; its
// JSON form is part of those commands' --json output.
type fileReport struct {
	File       string          `json:"file"`
	Valid      bool            `json:"valid"`
	Canonical  bool            `json:"canonical"`
	Format     string          `json:"format,omitempty"`
	ID         string          `json:"id,omitempty"`
	Name       string          `json:"name,omitempty"`
	SHA256     string          `json:"sha256,omitempty"`
	Size       int             `json:"size"`
	References int             `json:"references"`
	Frames     int             `json:"frames"`
	Seconds    float64         `json:"seconds"`
	Problems   []problemReport `json:"problems,omitempty"`

	voice *voices.Voice
}

// problemReport is one problem of a file.
type problemReport struct {
	Field     string `json:"field,omitempty"`
	Reference *int   `json:"reference,omitempty"`
	Offset    *int64 `json:"offset,omitempty"`
	Message   string `json:"message"`
}

// inspect reads, checks and measures one voice file. Problems with the file
// are in the report, not the error; the report is always usable.
func inspect(name string, opts *voices.Options) *fileReport {
	r := &fileReport{File: name}
	data, err := voices.ReadBytes(name)
	if err != nil {
		r.Problems = problemsOf(err)
		return r
	}
	r.Size, r.SHA256 = len(data), voices.FileSHA256(data)
	v, err := voices.Parse(data, opts)
	r.Problems = problemsOf(err)
	r.Valid = err == nil
	if v == nil {
		return r
	}
	r.voice, r.Format, r.ID, r.Name = v, string(v.Format), v.ID, v.Name
	r.References, r.Frames, r.Seconds = len(v.References), v.TotalFrames(), seconds(v.TotalFrames())
	r.Canonical = r.Valid && voices.IsCanonical(data, v)
	return r
}

func seconds(frames int) float64 {
	return math.Round(voices.Seconds(frames)*100) / 100
}

// problemsOf turns a voices error into problem reports.
func problemsOf(err error) []problemReport {
	if err == nil {
		return nil
	}
	var ve *voices.ValidationError
	if errors.As(err, &ve) {
		out := make([]problemReport, len(ve.Problems))
		for i, p := range ve.Problems {
			out[i] = problemOf(p)
		}
		return out
	}
	var fe *voices.FieldError
	if errors.As(err, &fe) {
		return []problemReport{problemOf(fe)}
	}
	return []problemReport{{Message: strings.TrimPrefix(err.Error(), "voices: ")}}
}

func problemOf(fe *voices.FieldError) problemReport {
	p := problemReport{Field: fe.Field, Message: strings.TrimPrefix(fe.Err.Error(), "voices: ")}
	if i := fe.Reference(); i >= 0 {
		p.Reference = &i
	}
	if fe.Offset >= 0 {
		off := fe.Offset
		p.Offset = &off
	}
	return p
}

// String formats a problem for a person: "field (offset N): message".
func (p problemReport) String() string {
	var b strings.Builder
	if p.Field != "" {
		b.WriteString(p.Field)
	}
	if p.Offset != nil {
		fmt.Fprintf(&b, " (offset %d)", *p.Offset)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return strings.TrimSpace(b.String())
}

// inspectAll inspects files in parallel and returns reports in input order.
func inspectAll(files []string, opts *voices.Options) []*fileReport {
	out := make([]*fileReport, len(files))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = inspect(files[i], opts)
			}
		}()
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// loadOptions returns the validation options: the special tokens of the
// tokenizer.json at path, or the defaults when path is empty.
func loadOptions(path string) (*voices.Options, error) {
	if path == "" {
		return nil, nil
	}
	toks, err := voices.ReadTokenizerFile(path)
	if err != nil {
		return nil, err
	}
	return &voices.Options{SpecialTokens: toks}, nil
}

// printProblems writes each problem of r on stderr.
func printProblems(f *cmdutil.Factory, r *fileReport) {
	for _, p := range r.Problems {
		fmt.Fprintf(f.IO.ErrOut, "%s: %s\n", safetext.Escape(r.File), safetext.Lines(fmt.Sprint(p)))
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
