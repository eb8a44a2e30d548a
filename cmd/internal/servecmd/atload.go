package servecmd

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/native"
	"github.com/drama-tts/drama/engine/serve"
	"github.com/drama-tts/drama/internal/filehash"
	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub"
)

// verifyInstall checks the variant's files against its pins at the level
// of --verify before the engine starts; a mismatch is a verification error
// (exit 3) that says how to repair the files with the user's own flags.
// A sha256 check reuses the verified-state record, so unchanged files are
// not read again.
func verifyInstall(ctx context.Context, opts *Options, root string, logger *slog.Logger) error {
	f := opts.F
	if opts.Verify == "none" {
		return nil
	}
	level, _ := pins.ParseLevel(opts.Verify)
	p, err := cmdutil.LoadPins(f, "", false, pins.ForInstalled)
	if err != nil {
		return err
	}
	dir := filepath.Join(root, p.Variant)
	if !p.Complete() {
		if level == pins.LevelSize {
			logger.Warn("the variant's files are not checked: its pins carry no digests (drama fetch writes them); --verify none skips this check",
				"variant", p.Variant, "pins", filepath.Join(dir, pins.LockFileName))
			return nil
		}
		return fmt.Errorf("--verify sha256: the pins of %s carry no sha256 for its files: run %s to fill them in, or serve with --verify size",
			p.Variant, f.Suggest("pins", "lock", "--variant", p.Variant))
	}
	rep, err := pins.VerifyBeforeUse(ctx, dir, p, level, func(total int64) (func(int64), func()) {
		bar := f.NewProgress("verify "+p.Variant, total)
		return bar.Add, bar.Finish
	})
	if err != nil {
		return cmdutil.PinsAdvice(f, err, p, "")
	}
	if rep.RecordError != "" {
		logger.Warn("could not save the verified-state record", "err", rep.RecordError)
	}
	var bad []string
	hashed, recorded := 0, 0 // known by sha256; of them, from the record
	for _, r := range rep.Files {
		switch {
		case r.Status != pins.StatusOK:
			bad = append(bad, r.Path+": "+fileProblem(r))
		case r.Verified == pins.LevelSHA256:
			hashed++
			if r.FromRecord {
				recorded++
			}
		}
	}
	details := f.Suggest("verify", "--variant", p.Variant, "--level", string(level))
	switch {
	case rep.Mismatched():
		shown := bad[:min(3, len(bad))]
		return cmdutil.MismatchError(fmt.Errorf("%d of %d files of %s do not match the pins (%s%s); the engine was not started: %s (%s lists them all)",
			len(bad), len(rep.Files), p.Variant, strings.Join(shown, "; "), more(len(bad)-len(shown)),
			cmdutil.RepairHint(f, p, "", dir), details))
	case len(bad) > 0:
		return fmt.Errorf("%d of %d files of %s could not be read (%s): check their permissions (%s)", len(bad), len(rep.Files), p.Variant, strings.Join(bad, "; "), details)
	}
	logger.Info("the variant's files match the pins", "variant", p.Variant, "level", string(level), "files", len(rep.Files),
		"sha256", hashed, "sha256_from_record", recorded)
	return nil
}

func fileProblem(r pins.Result) string {
	switch r.Status {
	case pins.StatusSizeMismatch:
		return fmt.Sprintf("size want %d, got %d", r.WantSize, r.GotSize)
	case pins.StatusSHA256Mismatch:
		return fmt.Sprintf("sha256 want %s, got %s", r.WantSHA256, r.GotSHA256)
	case pins.StatusMissing:
		return "missing"
	}
	return cmp.Or(r.Error, string(r.Status))
}

func more(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf("; %d more", n)
}

// engineSettings adds the native engine's settings of the flags to req:
// the long-form segment length and history (with --long-form) and the
// number of voice prefixes it keeps cached.
func engineSettings(opts *Options, req *engine.StartRequest) {
	if opts.LongForm {
		req.Params = map[string]string{
			native.ParamLongFormChars:   fmt.Sprint(opts.LongFormChars),
			native.ParamLongFormHistory: fmt.Sprint(opts.LongFormHistory),
		}
	}
	req.Env = append(req.Env, fmt.Sprintf("%s=%d", native.EnvPrefixCache, opts.PrefixCache))
}

// takeGPULock takes --gpu-lock, the lock file the GPU jobs of the host
// share (an exclusive flock holding the holder's pid), waiting at most
// --gpu-lock-wait; the error then names the holder. It is held until
// drama serve ends, which stops the engine first.
func takeGPULock(ctx context.Context, opts *Options, logger *slog.Logger) (unlock func(), err error) {
	if opts.GPULock == "" {
		return func() {}, nil
	}
	logger.Info("taking the GPU lock", "file", opts.GPULock, "wait", opts.GPULockWait.String())
	unlock, err = hub.Flock(ctx, opts.GPULock, opts.GPULockWait)
	if err != nil {
		return nil, fmt.Errorf("--gpu-lock: %w", cmdutil.FlockAdvice(err, "another GPU job of this host", "--gpu-lock-wait"))
	}
	logger.Info("holding the GPU lock", "file", opts.GPULock)
	return unlock, nil
}

// newQualification works out what a marker must be bound to now: this
// host, the variant's pins and the engine binary's sha256 (its record; the
// binary's own digest when --allow-engine-mismatch lets it differ).
func newQualification(ctx context.Context, opts *Options, req engine.StartRequest) *serve.Qualification {
	f := opts.F
	hint := []string{"qualify", "--variant", f.Global.Variant}
	if cmdutil.EngineBinaries[opts.Engine] != "" && given(opts.Given, "--engine") != "" {
		hint = append(hint, "--engine", opts.Engine)
	}
	hint = append(hint, "--engine-bin", given(opts.Given, "--engine-bin"), "--plugin-dir", given(opts.Given, "--plugin-dir"),
		"--accept-native-numerics", "true")
	q := &serve.Qualification{Root: req.Root, Hint: f.Suggest(hint...)}
	q.Want, _, q.Err = cmdutil.CurrentBinding(f, "", false)
	if q.Err != nil {
		return q
	}
	q.Want.NativeSHA256 = req.EngineSHA256
	if opts.AllowEngine && req.EngineBin != "" {
		sum, _, err := filehash.SHA256(ctx, req.EngineBin, nil)
		if err != nil {
			q.Err = err
			return q
		}
		q.Want.NativeSHA256 = sum
	}
	return q
}

// given returns the value the user gave flag, or "".
func given(pairs []string, flag string) string {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] == flag {
			return pairs[i+1]
		}
	}
	return ""
}
