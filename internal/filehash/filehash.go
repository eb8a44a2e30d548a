// Package filehash is drama's one hasher of a whole file (SHA256: on Linux
// through read-only mappings, a window at a time, so that a worker hashing a
// file in the page cache spends its core on sha256 alone) and its one reader
// of sha256sum's format (ReadSums, ParseSums): the checksum beside a plugin,
// the engine's record, a recipe's patch series. It imports the standard
// library, x/sys (the mappings) and internal/safetext (a bad line quoted
// safely), and every package may import it.
package filehash

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
)

// hashBufSize is the read size of SHA256 where it reads (and the step in
// which a mapped file is hashed): large steps keep the per-step overhead
// well under the hashing cost.
const hashBufSize = 1 << 20

// SHA256 returns the sha256 (lower-case hex) and size of a file, reading
// it once. progress, if not nil, is called with the bytes hashed after each
// block. It stops early with ctx's error when ctx is done.
//
// Where the system allows it, the file is mapped into memory and hashed in
// place: no copy into a buffer and no read system call per block, so a
// worker hashing a file in the page cache spends its core on sha256 alone
// and never gives it up to the scheduler in the middle of a read. A file
// that shrinks while it is hashed gives an error naming the offset.
func SHA256(ctx context.Context, name string, progress func(n int64)) (sum string, size int64, err error) {
	f, err := os.Open(name)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	size, mapped, err := hashMapped(ctx, f, h, progress)
	if err == nil && mapped {
		// Bytes appended since the mapping was made are read as they
		// would have been without it.
		if _, err = f.Seek(size, io.SeekStart); err == nil {
			var more int64
			more, err = hashRead(ctx, f, h, progress)
			size += more
		}
	} else if err == nil {
		size, err = hashRead(ctx, f, h, progress)
	}
	if err != nil {
		return "", size, fmt.Errorf("read %s at offset %d: %w", name, size, err)
	}
	return hex.EncodeToString(h.Sum(nil)), size, nil
}

// hashRead hashes f from its current offset to the end with read calls.
func hashRead(ctx context.Context, f *os.File, h hash.Hash, progress func(n int64)) (size int64, err error) {
	buf := make([]byte, hashBufSize)
	for {
		if err := ctx.Err(); err != nil {
			return size, err
		}
		n, rerr := f.Read(buf)
		if n > 0 {
			h.Write(buf[:n])
			size += int64(n)
			if progress != nil {
				progress(int64(n))
			}
		}
		if rerr == io.EOF {
			return size, nil
		}
		if rerr != nil {
			return size, rerr
		}
	}
}
