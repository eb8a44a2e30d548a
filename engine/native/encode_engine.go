package native

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/drama-tts/drama/engine"
)

// Encode runs the flavor's voice encoder once per clip: CUDA
// "tensorfold-native voice encode", Metal "drama3-generate --encode". Each
// clip must be a canonical WAV (mono 16-bit 44.1 kHz, at most 30 s); clips
// given as bytes are written to a temporary file first.
func (e *Engine) Encode(ctx context.Context, req engine.EncodeRequest, progress func(engine.EncodeProgress)) ([]engine.EncodedClip, error) {
	if err := e.checkOS(); err != nil {
		return nil, err
	}
	bin, err := e.binary(req.Install, e.flavor.EncodeBinary)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "drama-clips-*")
	if err != nil {
		return nil, engine.Errorf(engine.KindFailed, "encode: %w", err)
	}
	defer os.RemoveAll(tmp)
	cfg := EncodeConfig{Flavor: e.flavor, Binary: bin, Env: Environ(os.Environ()), TmpDir: tmp}
	if req.ModelDir != "" {
		cfg.Codec = filepath.Join(req.ModelDir, "codec.pth")
	}
	out := make([]engine.EncodedClip, 0, len(req.Clips))
	for i, c := range req.Clips {
		report := func(f float64, stage string) {
			if progress != nil {
				progress(engine.EncodeProgress{ClipID: c.ID, Index: i, Count: len(req.Clips), Fraction: f, Stage: stage})
			}
		}
		r, err := e.encodeOne(ctx, cfg, c, i, report)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (e *Engine) encodeOne(ctx context.Context, cfg EncodeConfig, c engine.Clip, i int, report func(float64, string)) (engine.EncodedClip, error) {
	report(0, "checking")
	path, samples, err := clipFile(cfg.TmpDir, c, i)
	if err != nil {
		return engine.EncodedClip{}, err
	}
	report(0.1, "encoding")
	codes, err := EncodeClip(ctx, cfg, path)
	if err != nil {
		if ctx.Err() != nil {
			return engine.EncodedClip{}, ctx.Err()
		}
		var x *ExitError
		tail := ""
		if errors.As(err, &x) {
			tail = x.Tail
		}
		return engine.EncodedClip{}, &engine.Error{Kind: engine.KindFailed, Op: "encode", Msg: fmt.Sprintf("clip %q: %v", c.ID, err), LogTail: tail, Err: err}
	}
	report(1, "done")
	return engine.EncodedClip{ClipID: c.ID, Text: c.Text, Codes: codes, Frames: len(codes[0]), Samples: samples}, nil
}

// clipFile returns a path holding the clip, after checking it is a
// canonical WAV of 1 sample to 30 s.
func clipFile(dir string, c engine.Clip, i int) (string, int64, error) {
	data := c.Data
	if c.Path != "" {
		b, err := os.ReadFile(c.Path)
		if err != nil {
			return "", 0, engine.Invalidf("clip %q: %w", c.ID, err)
		}
		data = b
	}
	r := bytes.NewReader(data)
	info, err := ReadWAVHeader(r)
	if err != nil {
		return "", 0, engine.Invalidf("clip %q: %w; convert it to mono 16-bit 44.1 kHz WAV first", c.ID, err)
	}
	samples := info.DataSize / BytesPerSample
	if samples == 0 || samples > MaxEncodeSeconds*SampleRate || int64(r.Len()) < info.DataSize {
		return "", 0, engine.Invalidf("clip %q: %d samples of %d bytes of data: want 1 sample to %d s, complete",
			c.ID, samples, len(data), MaxEncodeSeconds)
	}
	if c.Path != "" {
		return c.Path, samples, nil
	}
	p := filepath.Join(dir, fmt.Sprintf("clip-%03d.wav", i))
	if err := os.WriteFile(p, data, 0o600); err != nil {
		return "", 0, engine.Errorf(engine.KindFailed, "clip %q: %w", c.ID, err)
	}
	return p, samples, nil
}
