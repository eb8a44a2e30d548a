package servecmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/engine"
	"github.com/drama-tts/drama/engine/serve"
	"github.com/drama-tts/drama/internal/filehash"
	"github.com/drama-tts/drama/pins"
	"github.com/drama-tts/drama/pins/hub"
)

// verifyInstall checks the variant's files against its pins at the level
// of --verify before the engine starts (serve.VerifyFiles); a mismatch is a
// verification error (exit 3) that says how to repair the files with the
// user's own flags.
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
	err = serve.VerifyFiles(ctx, dir, p, level, func(total int64) (func(int64), func()) {
		bar := f.NewProgress("verify "+p.Variant, total)
		return bar.Add, bar.Finish
	}, logger)
	details := f.Suggest("verify", "--variant", p.Variant, "--level", string(level))
	var fe *serve.FilesError
	switch {
	case errors.Is(err, serve.ErrNoDigests):
		return fmt.Errorf("--verify sha256: the pins of %s carry no sha256 for its files: run %s to fill them in, or serve with --verify size",
			p.Variant, f.Suggest("pins", "lock", "--variant", p.Variant))
	case errors.As(err, &fe) && fe.Mismatched:
		return cmdutil.MismatchError(fmt.Errorf("%w; the engine was not started: %s (%s lists them all)", err, cmdutil.RepairHint(f, p, "", dir), details))
	case errors.As(err, &fe):
		return fmt.Errorf("%w: check their permissions (%s)", err, details)
	case err != nil:
		return cmdutil.PinsAdvice(f, err, p, "")
	}
	return nil
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
