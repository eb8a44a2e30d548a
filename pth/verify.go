package pth

import (
	"context"
	"hash/crc32"
	"io"
)

// VerifyChecksums reads every record of a zip checkpoint and compares its
// CRC-32 with the one the archive declares, returning how many records
// were checked. A non-empty record declaring 0 is skipped: torch writes 0
// when told not to compute checksums. A mismatch is a *RecordError wrapping
// ErrChecksum. Legacy checkpoints carry no checksums: it returns 0, nil.
func (rd *Reader) VerifyChecksums(ctx context.Context) (int, error) {
	checked := 0
	buf := make([]byte, 1<<20)
	for _, rec := range rd.Records {
		if rec.CRC32 == 0 && rec.Size > 0 {
			continue
		}
		sum, err := rd.recordCRC(ctx, rec, buf)
		if err != nil {
			return checked, err
		}
		if sum != rec.CRC32 {
			return checked, recordErr(rec.Name, ErrChecksum, "CRC-32 want %08x, got %08x: the file is damaged", rec.CRC32, sum)
		}
		checked++
	}
	return checked, nil
}

func (rd *Reader) recordCRC(ctx context.Context, rec *Record, buf []byte) (uint32, error) {
	if rec.Method != Store {
		b, err := readRecord(rd.src, rec, rd.lim.MaxPickle)
		return crc32.ChecksumIEEE(b), err
	}
	h := crc32.NewIEEE()
	sr := io.NewSectionReader(rd.src, rec.DataOffset, rec.Size)
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		n, err := sr.Read(buf)
		h.Write(buf[:n])
		if err == io.EOF {
			return h.Sum32(), nil
		}
		if err != nil {
			return 0, recordErr(rec.Name, ErrTruncated, "read: %v", err)
		}
	}
}
