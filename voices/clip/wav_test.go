package clip

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadWAVFixtures(t *testing.T) {
	tests := []struct {
		file     string
		rate     int
		channels int
		coding   string
		tol      float64
	}{
		{"fmt-pcm16-44k.wav", 44100, 1, "pcm16", 1e-4},
		{"fmt-pcm24-48k-stereo.wav", 48000, 2, "pcm24", 1e-6},
		{"fmt-pcm32-22k.wav", 22050, 1, "pcm32", 1e-6},
		{"fmt-float32-48k.wav", 48000, 1, "float32", 1e-6},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			a, err := (Decoder{}).Decode(context.Background(), filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if a.Rate != tt.rate || a.Channels != tt.channels || a.Coding != tt.coding {
				t.Fatalf("want %d Hz x%d %s, got %d Hz x%d %s", tt.rate, tt.channels, tt.coding, a.Rate, a.Channels, a.Coding)
			}
			if want := tt.rate / 4; a.Frames() != want {
				t.Fatalf("frames: want %d, got %d", want, a.Frames())
			}
			// sox's sine: 0.5 * sin(2 pi 1000 t), in every channel
			for ch := 0; ch < a.Channels; ch++ {
				x := make([]float32, a.Frames())
				for i := range x {
					x[i] = a.Data[i*a.Channels+ch]
				}
				amp, resid := fitSine(x, 1000, float64(tt.rate))
				if math.Abs(amp-0.5) > 0.005 || resid > 1e-3 {
					t.Fatalf("channel %d: want a 0.5 sine at 1 kHz, got amplitude %.4f, residual %.5f", ch, amp, resid)
				}
			}
		})
	}
}

func TestReadWAVRefusesALaw(t *testing.T) {
	_, err := (Decoder{}).Decode(context.Background(), "testdata/fmt-alaw.wav")
	var fe *FormatError
	if !errors.Is(err, ErrUnsupported) || !errors.As(err, &fe) {
		t.Fatalf("want ErrUnsupported *FormatError, got %v", err)
	}
	if fe.Field != "fmt.audio_format" || !strings.Contains(err.Error(), "fmt-alaw.wav") || !strings.Contains(err.Error(), "A-law") {
		t.Fatalf("error should name the file, field and coding: %v", err)
	}
}

// wavBytes builds a WAV file by hand: fmt fields, then data.
func wavBytes(tag uint16, channels, rate, bits int, data []byte) []byte {
	var b bytes.Buffer
	b.WriteString("RIFF")
	binary.Write(&b, binary.LittleEndian, uint32(36+len(data)))
	b.WriteString("WAVEfmt ")
	binary.Write(&b, binary.LittleEndian, uint32(16))
	binary.Write(&b, binary.LittleEndian, tag)
	binary.Write(&b, binary.LittleEndian, uint16(channels))
	binary.Write(&b, binary.LittleEndian, uint32(rate))
	binary.Write(&b, binary.LittleEndian, uint32(rate*channels*bits/8))
	binary.Write(&b, binary.LittleEndian, uint16(channels*bits/8))
	binary.Write(&b, binary.LittleEndian, uint16(bits))
	b.WriteString("data")
	binary.Write(&b, binary.LittleEndian, uint32(len(data)))
	b.Write(data)
	return b.Bytes()
}

func TestReadWAVBadInput(t *testing.T) {
	good := wavBytes(1, 1, 44100, 16, make([]byte, 8))
	set := func(off int, v ...byte) []byte {
		b := append([]byte(nil), good...)
		copy(b[off:], v)
		return b
	}
	tests := []struct {
		name   string
		in     []byte
		target error
		field  string
	}{
		{"empty", nil, ErrFormat, "riff"},
		{"not riff", []byte("OggS0000000000000000"), ErrFormat, "riff"},
		{"rf64", set(0, 'R', 'F', '6', '4'), ErrUnsupported, "riff"},
		{"no data", good[:36], ErrFormat, "data"},
		{"no fmt", append([]byte("RIFF\x00\x00\x00\x00WAVE"), good[36:]...), ErrFormat, "data"},
		{"short fmt", set(16, 8), ErrFormat, "fmt"},
		{"fmt past end", set(16, 0xff, 0xff), ErrFormat, "fmt"},
		{"8-bit", wavBytes(1, 1, 44100, 8, make([]byte, 4)), ErrUnsupported, "fmt.bits_per_sample"},
		{"float64", wavBytes(3, 1, 44100, 64, make([]byte, 16)), ErrUnsupported, "fmt.bits_per_sample"},
		{"mu-law", wavBytes(7, 1, 8000, 8, make([]byte, 4)), ErrUnsupported, "fmt.audio_format"},
		{"zero channels", set(22, 0), ErrFormat, "fmt.channels"},
		{"rate zero", set(24, 0, 0, 0, 0), ErrFormat, "fmt.sample_rate"},
		{"block align", set(32, 4), ErrFormat, "fmt.block_align"},
		{"truncated data", good[:len(good)-3], ErrFormat, "data.size"},
		{"odd data", set(40, 7), ErrFormat, "data.size"},
		{"float NaN", wavBytes(3, 1, 44100, 32, []byte{0, 0, 0, 0, 0, 0, 0xc0, 0x7f}), ErrFormat, "data"},
		{"float Inf", wavBytes(3, 1, 44100, 32, []byte{0, 0, 0x80, 0xff}), ErrFormat, "data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadWAV(bytes.NewReader(tt.in))
			var fe *FormatError
			if !errors.Is(err, tt.target) || !errors.As(err, &fe) {
				t.Fatalf("want %v, got %v", tt.target, err)
			}
			if fe.Field != tt.field {
				t.Fatalf("field: want %q, got %q (%v)", tt.field, fe.Field, err)
			}
		})
	}
}

func TestReadWAVStreamedSize(t *testing.T) {
	// a writer that could not seek back leaves 0xFFFFFFFF as the data size
	b := wavBytes(3, 2, 48000, 32, make([]byte, 64))
	binary.LittleEndian.PutUint32(b[40:], 0xFFFFFFFF)
	a, err := ReadWAV(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if a.Frames() != 8 || a.Channels != 2 {
		t.Fatalf("want 8 frames x2, got %d x%d", a.Frames(), a.Channels)
	}
}

func TestReadWAVSkipsChunksAndExtensible(t *testing.T) {
	// a LIST chunk of odd size (padded) before fmt, and fmt as WAVE_FORMAT_EXTENSIBLE
	var b bytes.Buffer
	b.WriteString("RIFF\x00\x00\x00\x00WAVE")
	b.WriteString("LIST\x03\x00\x00\x00abc\x00")
	b.WriteString("fmt ")
	fm := make([]byte, 40)
	binary.LittleEndian.PutUint16(fm[0:], 0xFFFE)
	binary.LittleEndian.PutUint16(fm[2:], 1)
	binary.LittleEndian.PutUint32(fm[4:], 16000)
	binary.LittleEndian.PutUint32(fm[8:], 32000)
	binary.LittleEndian.PutUint16(fm[12:], 2)
	binary.LittleEndian.PutUint16(fm[14:], 16)
	binary.LittleEndian.PutUint16(fm[16:], 22)
	binary.LittleEndian.PutUint16(fm[24:], 1) // sub-format PCM
	binary.Write(&b, binary.LittleEndian, uint32(len(fm)))
	b.Write(fm)
	b.WriteString("data\x04\x00\x00\x00\x00\x40\x00\xc0")
	a, err := ReadWAV(&b)
	if err != nil {
		t.Fatal(err)
	}
	if a.Rate != 16000 || len(a.Data) != 2 || a.Data[0] != 0.5 || a.Data[1] != -0.5 {
		t.Fatalf("got %d Hz %v", a.Rate, a.Data)
	}
}

func TestEncodeWAVRoundTrip(t *testing.T) {
	x := []float32{0, 0.5, -0.5, 1, -1, 1.5, -1.5, 1.0 / 32768}
	a, err := ReadWAV(bytes.NewReader(EncodeWAV(x, 44100)))
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{0, 0.5, -0.5, 32767.0 / 32768, -1, 32767.0 / 32768, -1, 1.0 / 32768}
	if a.Rate != 44100 || a.Channels != 1 || a.Coding != "pcm16" {
		t.Fatalf("got %d Hz x%d %s", a.Rate, a.Channels, a.Coding)
	}
	for i := range want {
		if a.Data[i] != want[i] {
			t.Fatalf("sample %d: want %v, got %v", i, want[i], a.Data[i])
		}
	}
}

func TestMonoIsMean(t *testing.T) {
	a := &Audio{Rate: 8000, Channels: 2, Data: []float32{1, 0, 0.5, -0.5, -1, 0}}
	got := a.Mono()
	want := []float32{0.5, 0, -0.5}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("want %v, got %v", want, got)
		}
	}
}

func FuzzReadWAV(f *testing.F) {
	files, _ := filepath.Glob("testdata/fmt-*.wav")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 4096)])
	}
	f.Add(wavBytes(1, 1, 44100, 16, make([]byte, 8)))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ReadWAV(bytes.NewReader(b))
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("want a *FormatError, got %T %v", err, err)
			}
			return
		}
		if a.Channels < 1 || len(a.Data)%a.Channels != 0 || len(a.Data) > len(b) {
			t.Fatalf("inconsistent audio: %d channels, %d samples from %d bytes", a.Channels, len(a.Data), len(b))
		}
	})
}
