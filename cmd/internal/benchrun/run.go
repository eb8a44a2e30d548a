package benchrun

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine/bench"
	"github.com/drama-tts/drama/internal/atomicfile"
)

// Client returns a client of drama serve at url that sends the key in
// DRAMA_API_KEY, if set.
func Client(f *cmdutil.Factory, url string) *bench.Client {
	return &bench.Client{URL: url, APIKey: f.APIKey()}
}

// AuthAdvice adds to err what to do when it is drama serve's 401 or 403
// (*bench.AuthError); any other error comes back as it is.
func AuthAdvice(f *cmdutil.Factory, err error) error {
	var ae *bench.AuthError
	if !errors.As(err, &ae) {
		return err
	}
	return fmt.Errorf("%w; %s", err, cmdutil.AuthAdvice(ae.Status, cmdutil.ChallengeScope(ae.Challenge, "speak"), f.APIKey() != ""))
}

// LoadCorpus returns --corpus's corpus, or the built-in one.
func LoadCorpus(name string) (*bench.Corpus, error) {
	if name == "" {
		return bench.DefaultCorpus(), nil
	}
	return bench.ReadCorpus(name)
}

// ProgressFor sets cfg.Progress to count requests on a progress display
// and warn of each reply that is not valid audio; the caller finishes it.
func ProgressFor(f *cmdutil.Factory, cfg *bench.Config) cmdutil.Progress {
	bar := f.NewCountProgress("bench", int64(cfg.Requests()))
	cfg.Progress = func(done, total int, r *bench.Request) {
		bar.SetTotal(int64(total))
		bar.Add(1)
		if !r.Valid() {
			f.Warnf("%s %s %s %s: %s", r.Pass, r.Mode, r.TextID, bench.VoiceLabel(r.Voice), r.Error)
		}
	}
	return bar
}

// WriteReports writes report.json and report.html into dir.
func WriteReports(rep *bench.Report, dir string) error {
	data, err := rep.MarshalIndent()
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "report.json"), data, 0o644); err != nil {
		return err
	}
	var page bytes.Buffer
	if err := rep.WriteHTML(&page); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, "report.html"), page.Bytes(), 0o644)
}
