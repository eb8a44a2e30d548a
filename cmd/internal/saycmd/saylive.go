package saycmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/internal/atomicfile"
	"github.com/drama-tts/drama/internal/httpsafe"
	"github.com/drama-tts/drama/internal/model"
)

// checkLiveFlags refuses what --live cannot do, repeating the user's flags.
func checkLiveFlags(opts *Options) error {
	switch {
	case !opts.Live:
		return cmdutil.FlagErrorf("--format %s is for --live: drama say %q writes a WAV file", opts.Format, opts.Text)
	case opts.Text != "-":
		return cmdutil.FlagErrorf("--live speaks standard input as it comes: give - as TEXT (printf '%%s' %q | drama say --live -)", opts.Text)
	case opts.Format != "wav" && opts.Format != "pcm":
		return cmdutil.FlagErrorf("--format %q: want wav or pcm", opts.Format)
	case opts.Instructions != "":
		return cmdutil.FlagErrorf("--instructions is not taken with --live (Fish Audio's live request has no directions): put the direction in the text, e.g. \"[%s] ...\"", opts.Instructions)
	}
	return nil
}

// liveURL turns --server into the live route's WebSocket URL.
func liveURL(server string) (string, error) {
	speech, err := speechURL(server)
	if err != nil {
		return "", err
	}
	u, _ := url.Parse(speech)
	u.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	u.Path = strings.TrimSuffix(u.Path, "/v1/audio/speech") + "/v1/tts/live"
	return u.String(), nil
}

// runSayLive speaks standard input through /v1/tts/live as it comes, the
// audio written as it arrives: to standard output, or into a WAV file
// whose sizes are fixed at the end (a session that fails leaves no file).
func runSayLive(ctx context.Context, opts *Options) error {
	endpoint, err := liveURL(opts.Server)
	if err != nil {
		return err
	}
	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{CheckRedirect: httpsafe.CheckRedirect}
	}
	key := opts.F.APIKey()
	req := httpapi.LiveRequest{Voice: opts.Voice, Format: opts.Format}
	start := time.Now()
	speak := func(w io.Writer) (httpapi.LiveResult, error) {
		res, err := httpapi.SpeakLive(ctx, client, endpoint, key, req, opts.F.IO.In, w)
		var refused *httpapi.LiveRefused
		var failed *httpapi.LiveFailed
		switch {
		case errors.As(err, &refused):
			return res, apiFailure(refused.Response, key != "")
		case errors.As(err, &failed):
			return res, err
		case err != nil && res.Bytes == 0 && ctx.Err() == nil:
			return res, fmt.Errorf("reach drama serve at %s: %w (is it running? start it with `drama serve`)", opts.Server, err)
		}
		return res, err
	}
	if opts.Output == "-" {
		res, err := speak(opts.F.IO.Out)
		if err != nil {
			return err
		}
		opts.F.Infof("spoke %.2f s of audio to standard output, first audio after %.3f s", audioSeconds(res, opts.Format), res.FirstAudio.Seconds())
		return nil
	}
	if !opts.Force {
		if _, err := os.Stat(opts.Output); err == nil {
			return cmdutil.FlagErrorf("output %s exists: remove it, choose another -o, or pass --force", opts.Output)
		}
	}
	var res httpapi.LiveResult
	err = atomicfile.Write(opts.Output, 0o644, func(tmp *os.File) error {
		var err error
		if res, err = speak(tmp); err != nil {
			return err
		}
		if opts.Format == "wav" {
			if res.Bytes < 44 {
				return fmt.Errorf("drama serve sent %d bytes, not a WAV", res.Bytes)
			}
			return fixWAVSizes(tmp, res.Bytes-44)
		}
		return nil
	})
	if err != nil {
		return err
	}
	pcm := res.Bytes
	if opts.Format == "wav" {
		pcm -= 44
	}
	return report(opts.F, opts.Output, &sayResult{firstAudio: res.FirstAudio, total: time.Since(start), pcmBytes: pcm, reason: "stop"})
}

func audioSeconds(res httpapi.LiveResult, format string) float64 {
	n := res.Bytes
	if format == "wav" && n >= 44 {
		n -= 44
	}
	return float64(n/2) / model.SampleRate
}
