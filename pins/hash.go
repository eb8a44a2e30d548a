package pins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// hashBufSize is the read size of HashFile: large reads keep the
// per-call overhead well under the hashing cost.
const hashBufSize = 1 << 20

// HashFile returns the sha256 (lower-case hex) and size of a file, reading
// it once in large blocks. progress, if not nil, is called with the bytes
// read after each block. It stops early with ctx's error when ctx is done.
func HashFile(ctx context.Context, name string, progress func(n int64)) (sum string, size int64, err error) {
	f, err := os.Open(name)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, hashBufSize)
	for {
		if err := ctx.Err(); err != nil {
			return "", size, err
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
			break
		}
		if rerr != nil {
			return "", size, fmt.Errorf("read %s at offset %d: %w", name, size, rerr)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), size, nil
}
