// Package filehash is drama's one hasher of a whole file (SHA256 by name,
// SHA256At for a file held open: on Linux through read-only mappings, a
// window at a time, so that a worker hashing a file in the page cache
// spends its core on sha256 alone) and its one reader
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
// block. It stops early with ctx's cause (context.Cause) when ctx is done.
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
	size, mapped, err := hashMapped(ctx, f, -1, h, progress)
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

// SHA256At returns the sha256 (lower-case hex) of the first size bytes of
// r: for a caller that holds a file open and hashes the very bytes it
// reads, where SHA256 opens one by name. An *os.File is hashed as SHA256
// hashes it, in place through mappings where the system allows it; any
// other reader with ReadAt. progress and ctx are as for SHA256. Fewer than
// size bytes is an error naming the offset where they ended.
func SHA256At(ctx context.Context, r io.ReaderAt, size int64, progress func(n int64)) (string, error) {
	h := sha256.New()
	var done int64
	var err error
	name := "the file"
	if f, ok := r.(*os.File); ok {
		name = f.Name()
		done, _, err = hashMapped(ctx, f, size, h, progress)
	}
	if err == nil {
		var n int64
		n, err = hashRead(ctx, io.NewSectionReader(r, done, size-done), h, progress)
		done += n
		if err == nil && done < size {
			err = fmt.Errorf("%w: want %d bytes", io.ErrUnexpectedEOF, size)
		}
	}
	if err != nil {
		return "", fmt.Errorf("read %s at offset %d: %w", name, done, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashRead hashes r from where it is to its end with read calls.
func hashRead(ctx context.Context, r io.Reader, h hash.Hash, progress func(n int64)) (size int64, err error) {
	buf := make([]byte, hashBufSize)
	for {
		if ctx.Err() != nil {
			return size, context.Cause(ctx)
		}
		n, rerr := r.Read(buf)
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
