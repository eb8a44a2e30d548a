package clip

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"time"
)

// WAV codings (the fmt chunk's format tag).
const (
	wavPCM        = 1
	wavFloat      = 3
	wavExtensible = 0xFFFE
)

// MaxDataBytes is the largest WAV data chunk read: 1 GiB, over an hour of
// 48 kHz stereo float. Longer recordings must be cut first.
const MaxDataBytes = 1 << 30

// Audio is decoded audio: interleaved samples in [-1, 1] (float input may
// exceed that range) at Rate frames a second.
type Audio struct {
	Rate     int       // sample frames a second
	Channels int       // 1 or more
	Coding   string    // e.g. "pcm16", "pcm24", "pcm32", "float32"
	Data     []float32 // len(Data) = frames * Channels
}

// Frames returns the number of sample frames.
func (a *Audio) Frames() int {
	if a.Channels <= 0 {
		return 0
	}
	return len(a.Data) / a.Channels
}

// Duration returns the length of the audio.
func (a *Audio) Duration() time.Duration {
	if a.Rate <= 0 {
		return 0
	}
	return time.Duration(float64(a.Frames()) / float64(a.Rate) * float64(time.Second))
}

// Mono returns the mean of the channels.
func (a *Audio) Mono() []float32 {
	n, c := a.Frames(), a.Channels
	if c == 1 {
		return append([]float32(nil), a.Data[:n]...)
	}
	out := make([]float32, n)
	inv := 1 / float32(c)
	for i := range out {
		var s float32
		for _, v := range a.Data[i*c : i*c+c] {
			s += v
		}
		out[i] = s * inv
	}
	return out
}

// wavFmt is the content of a fmt chunk.
type wavFmt struct {
	tag        uint16
	channels   int
	rate       int
	blockAlign int
	bits       int
}

// ReadWAV reads a whole RIFF/WAVE stream: PCM 16, 24 or 32-bit integer or
// 32-bit float, any rate, any number of channels (WAVE_FORMAT_EXTENSIBLE
// included). Other codings are refused with ErrUnsupported.
func ReadWAV(r io.Reader) (*Audio, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxDataBytes+1<<20))
	if err != nil {
		return nil, fmt.Errorf("clip: read WAV: %w", err)
	}
	return parseWAV(b)
}

func formatErr(off int64, field, format string, args ...any) error {
	return &FormatError{Offset: off, Field: field, Msg: fmt.Sprintf(format, args...), Err: ErrFormat}
}

func unsupportedErr(off int64, field, format string, args ...any) error {
	return &FormatError{Offset: off, Field: field, Msg: fmt.Sprintf(format, args...), Err: ErrUnsupported}
}

func parseWAV(b []byte) (*Audio, error) {
	fm, body, size, err := scanWAV(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	return decodeData(b, body, size, fm)
}

// scanWAV reads the RIFF header and chunk headers of a WAV of size bytes
// from r up to its data chunk, and returns the format, the data's offset
// and its declared size (checked by dataSize).
func scanWAV(r io.ReaderAt, size int64) (fm *wavFmt, body, dsize int64, err error) {
	var hdr [12]byte
	n, _ := r.ReadAt(hdr[:], 0)
	b := hdr[:n]
	if len(b) < 12 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		if len(b) >= 4 && string(b[0:4]) == "RF64" {
			return nil, 0, 0, unsupportedErr(0, "riff", "RF64 (over 4 GiB) WAV is not read: cut the recording or decode it with ffmpeg")
		}
		return nil, 0, 0, formatErr(0, "riff", "want RIFF....WAVE header, got %q", head(b, 12))
	}
	off := int64(12)
	var ch [8]byte
	for off+8 <= size {
		if _, err := r.ReadAt(ch[:], off); err != nil {
			return nil, 0, 0, fmt.Errorf("clip: read WAV: %w", err)
		}
		id := string(ch[:4])
		csize := int64(binary.LittleEndian.Uint32(ch[4:]))
		body := off + 8
		switch id {
		case "fmt ":
			if body+csize > size {
				return nil, 0, 0, formatErr(off, "fmt", "chunk of %d bytes runs past the end of the file (%d bytes)", csize, size)
			}
			c := make([]byte, min(csize, 1024)) // parseFmt reads the first 40 bytes
			if _, err := r.ReadAt(c, body); err != nil {
				return nil, 0, 0, fmt.Errorf("clip: read WAV: %w", err)
			}
			f, err := parseFmt(c, body)
			if err != nil {
				return nil, 0, 0, err
			}
			fm = f
		case "data":
			if fm == nil {
				return nil, 0, 0, formatErr(off, "data", "data chunk before the fmt chunk")
			}
			dsize, err := dataSize(size, body, csize, fm)
			return fm, body, dsize, err
		}
		off = body + csize + csize&1
	}
	if fm == nil {
		return nil, 0, 0, formatErr(off, "fmt", "no fmt chunk")
	}
	return nil, 0, 0, formatErr(off, "data", "no data chunk")
}

func head(b []byte, n int) []byte {
	if len(b) < n {
		return b
	}
	return b[:n]
}

func parseFmt(c []byte, off int64) (*wavFmt, error) {
	if len(c) < 16 {
		return nil, formatErr(off, "fmt", "want at least 16 bytes, got %d", len(c))
	}
	f := &wavFmt{
		tag:        binary.LittleEndian.Uint16(c[0:]),
		channels:   int(binary.LittleEndian.Uint16(c[2:])),
		rate:       int(binary.LittleEndian.Uint32(c[4:])),
		blockAlign: int(binary.LittleEndian.Uint16(c[12:])),
		bits:       int(binary.LittleEndian.Uint16(c[14:])),
	}
	if f.tag == wavExtensible {
		if len(c) < 40 {
			return nil, formatErr(off, "fmt.extensible", "want 40 bytes for WAVE_FORMAT_EXTENSIBLE, got %d", len(c))
		}
		f.tag = binary.LittleEndian.Uint16(c[24:]) // the sub-format GUID starts with the tag
	}
	return f, checkFmt(f, off)
}

func checkFmt(f *wavFmt, off int64) error {
	switch {
	case f.channels < 1:
		return formatErr(off+2, "fmt.channels", "want at least 1 channel, got %d", f.channels)
	case f.rate < 1000 || f.rate > 768000:
		return formatErr(off+4, "fmt.sample_rate", "want 1000..768000 Hz, got %d", f.rate)
	}
	if _, err := codingName(f, off); err != nil {
		return err
	}
	if want := f.channels * f.bits / 8; f.blockAlign != want {
		return formatErr(off+12, "fmt.block_align", "want %d (channels x bytes per sample), got %d", want, f.blockAlign)
	}
	return nil
}

func codingName(f *wavFmt, off int64) (string, error) {
	switch {
	case f.tag == wavPCM && (f.bits == 16 || f.bits == 24 || f.bits == 32):
		return fmt.Sprintf("pcm%d", f.bits), nil
	case f.tag == wavFloat && f.bits == 32:
		return "float32", nil
	case f.tag == wavPCM || f.tag == wavFloat:
		return "", unsupportedErr(off+14, "fmt.bits_per_sample", "%d-bit %s is not read (16, 24 or 32-bit PCM, or 32-bit float): convert it, e.g. with sox or ffmpeg", f.bits, tagName(f.tag))
	}
	return "", unsupportedErr(off, "fmt.audio_format", "coding %s is not read (PCM or IEEE float only): decode it with ffmpeg, or install ffmpeg so drama can", tagName(f.tag))
}

func tagName(tag uint16) string {
	switch tag {
	case wavPCM:
		return "PCM"
	case wavFloat:
		return "IEEE float"
	case 2:
		return "0x0002 (Microsoft ADPCM)"
	case 6:
		return "0x0006 (A-law)"
	case 7:
		return "0x0007 (mu-law)"
	case 0x55:
		return "0x0055 (MP3)"
	}
	return fmt.Sprintf("0x%04X", tag)
}

// dataSize checks the data chunk's declared size against the file of
// total bytes. A size of 0 or 0xFFFFFFFF in a final chunk (a stream whose
// writer could not seek back) means "to the end".
func dataSize(total, body, size int64, f *wavFmt) (int64, error) {
	avail := total - body
	if size == 0xFFFFFFFF || (size == 0 && avail > 0) {
		size = avail - avail%int64(f.blockAlign)
	}
	if size > MaxDataBytes {
		return 0, unsupportedErr(body-4, "data.size", "%d bytes of audio is over the %d-byte limit: cut the recording", size, MaxDataBytes)
	}
	if size > avail {
		return 0, formatErr(body-4, "data.size", "want %d bytes of audio, got %d: the file is truncated", size, avail)
	}
	if size%int64(f.blockAlign) != 0 {
		return 0, formatErr(body-4, "data.size", "%d bytes is not a whole number of %d-byte sample frames", size, f.blockAlign)
	}
	return size, nil
}

// decodeData converts the data chunk of size bytes (checked by dataSize)
// at body.
func decodeData(b []byte, body, size int64, f *wavFmt) (*Audio, error) {
	name, _ := codingName(f, 0)
	a := &Audio{Rate: f.rate, Channels: f.channels, Coding: name}
	a.Data = convertSamples(b[body:body+size], f)
	if err := checkFinite(a.Data, body, 0); err != nil {
		return nil, err
	}
	return a, nil
}

// checkFinite refuses a NaN or infinite sample; x holds samples first...
// of the data chunk at body.
func checkFinite(x []float32, body, first int64) error {
	for i, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return formatErr(body+(first+int64(i))*4, "data", "sample %d is %v: the float data is corrupt", first+int64(i), v)
		}
	}
	return nil
}

func convertSamples(d []byte, f *wavFmt) []float32 {
	return convertInto(nil, d, f)
}

// convertInto is convertSamples into buf, grown when too short.
func convertInto(buf []float32, d []byte, f *wavFmt) []float32 {
	bps := f.bits / 8
	out := grow(&buf, len(d)/bps)
	switch {
	case f.tag == wavFloat:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(d[i*4:]))
		}
	case bps == 2:
		for i := range out {
			out[i] = float32(int16(binary.LittleEndian.Uint16(d[i*2:]))) / (1 << 15)
		}
	case bps == 3:
		for i := range out {
			v := int32(uint32(d[i*3])<<8|uint32(d[i*3+1])<<16|uint32(d[i*3+2])<<24) >> 8
			out[i] = float32(v) / (1 << 23)
		}
	default:
		for i := range out {
			out[i] = float32(float64(int32(binary.LittleEndian.Uint32(d[i*4:]))) / (1 << 31))
		}
	}
	return out
}

// EncodeWAV returns mono 16-bit PCM WAV bytes of x at rate. Samples are
// rounded to the nearest step and held to the 16-bit range.
func EncodeWAV(x []float32, rate int) []byte {
	n := len(x) * 2
	b := append(make([]byte, 0, 44+n), WAVHeader(rate, n)...)
	for _, v := range x {
		b = binary.LittleEndian.AppendUint16(b, uint16(toPCM16(v)))
	}
	return b
}

// WAVHeader is the 44-byte header of a 16-bit mono PCM WAV at rate Hz whose
// data chunk holds dataBytes bytes: what EncodeWAV writes before the
// samples.
func WAVHeader(rate, dataBytes int) []byte {
	le := binary.LittleEndian
	b := le.AppendUint32(append(make([]byte, 0, 44), "RIFF"...), uint32(36+dataBytes))
	b = le.AppendUint32(append(b, "WAVEfmt "...), 16)
	b = le.AppendUint16(b, wavPCM)
	b = le.AppendUint16(b, 1)
	b = le.AppendUint32(b, uint32(rate))
	b = le.AppendUint32(b, uint32(rate*2))
	b = le.AppendUint16(b, 2)
	b = le.AppendUint16(b, 16)
	return le.AppendUint32(append(b, "data"...), uint32(dataBytes))
}

func toPCM16(v float32) int16 {
	f := math.Round(float64(v) * (1 << 15))
	return int16(max(-32768, min(32767, f)))
}
