package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/drama-tts/drama/pins"
)

// ErrNoDigests is a sha256 check asked of pins that carry no sha256 for
// the variant's files.
var ErrNoDigests = errors.New("the pins carry no sha256 for the variant's files")

// FilesError is the variant's files not as their pins say: Bad lists each
// file refused with why ("codec.pth: size want 1000, got 5"), of Total;
// Mismatched is true when some do not match, false when they could not be
// read.
type FilesError struct {
	Variant    string
	Total      int
	Bad        []string
	Mismatched bool
}

// Error says how many files are refused, naming the first few when they
// do not match, every one when they could not be read.
func (e *FilesError) Error() string {
	if !e.Mismatched {
		return fmt.Sprintf("%d of %d files of %s could not be read (%s)", len(e.Bad), e.Total, e.Variant, strings.Join(e.Bad, "; "))
	}
	shown := e.Bad[:min(3, len(e.Bad))]
	more := ""
	if n := len(e.Bad) - len(shown); n > 0 {
		more = fmt.Sprintf("; %d more", n)
	}
	return fmt.Sprintf("%d of %d files of %s do not match the pins (%s%s)", len(e.Bad), e.Total, e.Variant, strings.Join(shown, "; "), more)
}

// VerifyFiles checks the variant's files in dir against its pins p at
// level before the engine starts (pins.VerifyBeforeUse: a sha256 check
// hashes only the files the verified-state record does not vouch for,
// hashing says how far it is). Pins without digests are let through at
// the size level with a warning, and refused at sha256 (ErrNoDigests); a
// file refused is a *FilesError; what passes is logged with how many
// files were known by sha256 and how many of them from the record.
func VerifyFiles(ctx context.Context, dir string, p *pins.Pins, level pins.Level, hashing func(total int64) (func(int64), func()), logger *slog.Logger) error {
	if !p.Complete() {
		if level == pins.LevelSHA256 {
			return ErrNoDigests
		}
		logger.Warn("the variant's files are not checked: its pins carry no digests (drama fetch writes them); --verify none skips this check",
			"variant", p.Variant, "pins", filepath.Join(dir, pins.LockFileName))
		return nil
	}
	rep, err := pins.VerifyBeforeUse(ctx, dir, p, level, hashing)
	if err != nil {
		return err
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
	if len(bad) > 0 {
		return &FilesError{Variant: p.Variant, Total: len(rep.Files), Bad: bad, Mismatched: rep.Mismatched()}
	}
	logger.Info("the variant's files match the pins", "variant", p.Variant, "level", string(level), "files", len(rep.Files),
		"sha256", hashed, "sha256_from_record", recorded)
	return nil
}

// fileProblem says why a file was refused.
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
