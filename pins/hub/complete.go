package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/drama-tts/drama/pins"
)

// MaxGitFileSize bounds the size of a small (non-LFS) file that Complete
// reads to learn its sha256.
const MaxGitFileSize = 64 << 20

// Complete returns a copy of p with every file's size and digests taken
// from the Hub's listing of p's exact commit: an LFS file's sha256 is its
// LFS oid; a small file's git blob sha1 is its oid, and its sha256 is
// computed from its bytes after they match that sha1. With no files
// pinned, the whole listing is taken. A file the listing lacks, or whose
// listed size or digest differs from a pinned one, is an error, and so is
// a result that disagrees with the totals p expects; both wrap
// ErrMismatch.
func (c *Client) Complete(ctx context.Context, p *pins.Pins) (*pins.Pins, error) {
	if !pins.IsCommit(p.Revision) {
		return nil, fmt.Errorf("hub: complete pins: revision %q is not a full 40-hex commit: pin a commit, not a branch or tag", p.Revision)
	}
	tree, err := c.Tree(ctx, p.Repo, p.Revision)
	if err != nil {
		return nil, err
	}
	listed := map[string]TreeFile{}
	for _, t := range tree {
		listed[t.Path] = t
	}
	q := *p
	q.Files = nil
	want := p.Files
	if len(want) == 0 {
		for _, t := range tree {
			want = append(want, pins.File{Path: t.Path})
		}
	}
	for _, pf := range want {
		// The names the pins take from a listing are refused before any
		// is asked for, as a pins file's are.
		if err := pins.CheckPath(pf.Path); err != nil {
			return nil, fmt.Errorf("hub: complete pins: the listing of %s@%s: %w: %w", p.Repo, p.Revision, ErrBadResponse, err)
		}
		t, ok := listed[pf.Path]
		if !ok {
			return nil, fmt.Errorf("hub: complete pins: %s: %w in the listing of %s@%s", pf.Path, ErrNotFound, p.Repo, p.Revision)
		}
		f, err := c.fill(ctx, p, pf, t)
		if err != nil {
			return nil, err
		}
		q.Files = append(q.Files, f)
	}
	if err := q.Validate(); err != nil {
		return nil, fmt.Errorf("hub: complete pins: %w", err)
	}
	if err := q.CheckExpected(); err != nil {
		return nil, fmt.Errorf("hub: complete pins: %w: the listing of %s@%s disagrees with the pinned totals: %w", ErrMismatch, p.Repo, shortCommit(p.Revision), err)
	}
	return &q, nil
}

// fill merges a listing entry into a pinned file, checking what the pin
// already says.
func (c *Client) fill(ctx context.Context, p *pins.Pins, pf pins.File, t TreeFile) (pins.File, error) {
	f := pins.File{Path: t.Path, Size: t.Size, LFS: t.LFS}
	if t.LFS {
		f.SHA256 = t.SHA256
	} else {
		f.GitSHA1 = t.GitOID
		sum, err := c.smallFileSHA256(ctx, p, t)
		if err != nil {
			return f, err
		}
		f.SHA256 = sum
	}
	mismatch := func(field string, want, got any) error {
		return fmt.Errorf("hub: complete pins: %w: %s: %s: pinned %v, listed %v", ErrMismatch, f.Path, field, want, got)
	}
	switch {
	case pf.Size != 0 && pf.Size != f.Size:
		return f, mismatch("size", pf.Size, f.Size)
	case pf.SHA256 != "" && pf.SHA256 != f.SHA256:
		return f, mismatch("sha256", pf.SHA256, f.SHA256)
	case pf.GitSHA1 != "" && f.GitSHA1 != "" && pf.GitSHA1 != f.GitSHA1:
		return f, mismatch("git_sha1", pf.GitSHA1, f.GitSHA1)
	}
	return f, nil
}

// smallFileSHA256 downloads a small git file, checks it against its git
// blob sha1 and returns its sha256.
func (c *Client) smallFileSHA256(ctx context.Context, p *pins.Pins, t TreeFile) (string, error) {
	if t.Size > MaxGitFileSize {
		return "", fmt.Errorf("hub: complete pins: %s: a non-LFS file of %d bytes is larger than %d", t.Path, t.Size, MaxGitFileSize)
	}
	var sum string
	err := c.withRetry(ctx, "GET "+t.Path, c.resolveURL(p.Repo, p.Revision, t.Path), func(ctx context.Context) error {
		var err error
		sum, err = c.getSmall(ctx, p.Repo, p.Revision, t)
		return err
	})
	if err != nil {
		return "", wrap(err, "hub: complete pins: %s", t.Path)
	}
	return sum, nil
}

func (c *Client) getSmall(ctx context.Context, repo, commit string, t TreeFile) (string, error) {
	resp, err := c.get(ctx, repo, c.resolveURL(repo, commit, t.Path))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	s2, s1 := sha256.New(), sha1.New()
	fmt.Fprintf(s1, "blob %d\x00", t.Size)
	n, err := io.Copy(io.MultiWriter(s2, s1), io.LimitReader(resp.Body, t.Size+1))
	if err != nil {
		return "", err
	}
	if n != t.Size {
		return "", fmt.Errorf("%w: size: want %d, got %d", ErrBadResponse, t.Size, n)
	}
	if got := hex.EncodeToString(s1.Sum(nil)); got != t.GitOID {
		return "", fmt.Errorf("%w: git blob sha1: want %s, got %s", ErrMismatch, t.GitOID, got)
	}
	return hex.EncodeToString(s2.Sum(nil)), nil
}
