package native

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// WAVHeaderSize is the size of the canonical 44-byte RIFF header that
// WriteWAVHeader writes.
const WAVHeaderSize = 44

// ErrWAV is wrapped by every error ReadWAVHeader returns.
var ErrWAV = errors.New("native: not a mono 16-bit 44.1 kHz WAV")

// WAVInfo describes the PCM data of a WAV file.
type WAVInfo struct {
	SampleRate int
	Channels   int
	Bits       int
	DataSize   int64 // bytes of PCM in the data chunk
}

// WAVHeader returns the canonical header of a mono 16-bit 44.1 kHz WAV file
// holding dataSize bytes of PCM.
func WAVHeader(dataSize int) []byte {
	h := make([]byte, WAVHeaderSize)
	copy(h[0:], "RIFF")
	binary.LittleEndian.PutUint32(h[4:], uint32(36+dataSize))
	copy(h[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(h[16:], 16)
	binary.LittleEndian.PutUint16(h[20:], 1) // PCM
	binary.LittleEndian.PutUint16(h[22:], 1) // mono
	binary.LittleEndian.PutUint32(h[24:], SampleRate)
	binary.LittleEndian.PutUint32(h[28:], SampleRate*BytesPerSample)
	binary.LittleEndian.PutUint16(h[32:], BytesPerSample)
	binary.LittleEndian.PutUint16(h[34:], 16)
	copy(h[36:], "data")
	binary.LittleEndian.PutUint32(h[40:], uint32(dataSize))
	return h
}

// ReadWAVHeader reads a RIFF header up to the start of the data chunk,
// skipping chunks other than fmt and data, and checks that the audio is mono
// 16-bit PCM at 44.1 kHz. The reader is left at the first PCM byte.
func ReadWAVHeader(r io.Reader) (WAVInfo, error) {
	var info WAVInfo
	var riff [12]byte
	if _, err := io.ReadFull(r, riff[:]); err != nil {
		return info, fmt.Errorf("%w: header at offset 0: %w", ErrWAV, err)
	}
	if string(riff[0:4]) != "RIFF" || string(riff[8:12]) != "WAVE" {
		return info, fmt.Errorf("%w: offset 0: want RIFF/WAVE, got %q/%q", ErrWAV, riff[0:4], riff[8:12])
	}
	off := int64(12)
	for {
		var ch [8]byte
		if _, err := io.ReadFull(r, ch[:]); err != nil {
			return info, fmt.Errorf("%w: chunk at offset %d: %w", ErrWAV, off, err)
		}
		size := int64(binary.LittleEndian.Uint32(ch[4:]))
		off += 8
		switch string(ch[0:4]) {
		case "data":
			info.DataSize = size
			return info, checkFormat(info, off)
		case "fmt ":
			if err := readFmt(r, size, off, &info); err != nil {
				return info, err
			}
		default:
			if _, err := io.CopyN(io.Discard, r, size+size%2); err != nil {
				return info, fmt.Errorf("%w: chunk %q at offset %d: %w", ErrWAV, ch[0:4], off, err)
			}
		}
		off += size + size%2
	}
}

func readFmt(r io.Reader, size, off int64, info *WAVInfo) error {
	if size < 16 || size > 1<<16 {
		return fmt.Errorf("%w: fmt chunk at offset %d: want 16 to 65536 bytes, got %d", ErrWAV, off, size)
	}
	b := make([]byte, size+size%2)
	if _, err := io.ReadFull(r, b); err != nil {
		return fmt.Errorf("%w: fmt chunk at offset %d: %w", ErrWAV, off, err)
	}
	if tag := binary.LittleEndian.Uint16(b[0:]); tag != 1 {
		return fmt.Errorf("%w: fmt chunk at offset %d: want PCM (format 1), got format %d", ErrWAV, off, tag)
	}
	info.Channels = int(binary.LittleEndian.Uint16(b[2:]))
	info.SampleRate = int(binary.LittleEndian.Uint32(b[4:]))
	info.Bits = int(binary.LittleEndian.Uint16(b[14:]))
	return nil
}

func checkFormat(info WAVInfo, off int64) error {
	switch {
	case info.Channels == 0:
		return fmt.Errorf("%w: data chunk at offset %d comes before the fmt chunk", ErrWAV, off)
	case info.Channels != 1:
		return fmt.Errorf("%w: channels: want 1, got %d", ErrWAV, info.Channels)
	case info.Bits != 16:
		return fmt.Errorf("%w: bits per sample: want 16, got %d", ErrWAV, info.Bits)
	case info.SampleRate != SampleRate:
		return fmt.Errorf("%w: sample rate: want %d, got %d", ErrWAV, SampleRate, info.SampleRate)
	}
	return nil
}
