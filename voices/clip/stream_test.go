package clip

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
)

// openFile opens path for reading in passes, closed at the test's end.
func openFile(t *testing.T, path string) *File {
	t.Helper()
	f, err := (Decoder{}).Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestFileReadsAsDecode: a File read at 44.1 kHz mono, in chunks of any
// size at any place, gives the bits Resample gives of the decoded clip.
func TestFileReadsAsDecode(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.wav")
	for _, p := range files {
		a, err := (Decoder{}).Decode(context.Background(), p)
		if errors.Is(err, ErrUnsupported) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		want := Resample(a.Mono(), a.Rate, SampleRate)
		f := openFile(t, p)
		s := newResampled(f)
		if s.Len() != len(want) || f.Rate != a.Rate || f.Channels != a.Channels || f.Coding != a.Coding || f.Duration() != a.Duration() {
			t.Fatalf("%s: %d samples %d Hz x%d %s, want %d %d Hz x%d %s", p, s.Len(), f.Rate, f.Channels, f.Coding, len(want), a.Rate, a.Channels, a.Coding)
		}
		got := make([]float32, len(want))
		if err := s.Read(got, 0); err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		for range 50 {
			at := r.IntN(len(want))
			n := r.IntN(min(len(want)-at, 5000)) + 1
			if err := s.Read(got[at:at+n], at); err != nil {
				t.Fatal(err)
			}
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: sample %d: %v, want %v", p, i, got[i], want[i])
			}
		}
	}
}

// TestPrepareFileAsAudio: the preparation of a clip read in passes is the
// preparation of the same clip decoded, to the bit: references, reports
// and warnings, at 22.05, 44.1 and 48 kHz, mono and stereo, with more
// pieces than are kept.
func TestPrepareFileAsAudio(t *testing.T) {
	fx := loadSpeech(t)
	dir := t.TempDir()
	// four copies of the speech with pauses, twice: more than 60 s, so
	// pieces are dropped, at 44.1 kHz PCM and 48 kHz stereo float
	var long []float32
	for range 4 {
		long = append(long, make([]float32, SampleRate)...)
		long = append(long, fx.x...)
	}
	wavs := map[string][]byte{
		"long44.wav": EncodeWAV(long, SampleRate),
		"long48.wav": stereoFloatWAV(Resample(long, SampleRate, 48000), 48000),
	}
	for name, b := range wavs {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"testdata/speech.wav", filepath.Join(dir, "long44.wav"), filepath.Join(dir, "long48.wav")} {
		a, err := (Decoder{}).Decode(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		want, werr := Prepare([]Clip{{Name: p, Audio: a}, {Name: "again", Audio: a}}, Options{})
		f := openFile(t, p)
		got, gerr := Prepare([]Clip{{Name: p, File: f}, {Name: "again", File: f}}, Options{})
		if !reflect.DeepEqual(werr, gerr) {
			t.Fatalf("%s: error %v, want %v", p, gerr, werr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: prepared in passes differs:\n got %+v\nwant %+v", p, got.Clips, want.Clips)
		}
		if p != "testdata/speech.wav" && hasWarning(want, WarnDropped) == nil {
			t.Errorf("%s: no piece dropped: the test wants some", p)
		}
	}
}

// stereoFloatWAV is x in both channels of a 32-bit float WAV at rate, the
// right channel at half the level.
func stereoFloatWAV(x []float32, rate int) []byte {
	b := WAVHeader(rate, 8*len(x))
	b[20], b[22], b[32], b[34] = wavFloat, 2, 8, 32
	le := []byte{0, 0, 0, 0}
	put := func(v float32) {
		u := math.Float32bits(v)
		le[0], le[1], le[2], le[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
		b = append(b, le...)
	}
	for _, v := range x {
		put(v)
		put(v / 2)
	}
	// byte rate: rate x 8
	r := uint32(rate * 8)
	b[28], b[29], b[30], b[31] = byte(r), byte(r>>8), byte(r>>16), byte(r>>24)
	return b
}

// TestOpenRefusesAsDecode: a corrupt float sample, a truncated file and a
// clip longer than MaxFileDuration are refused by Open, naming the file.
func TestOpenRefusesAsDecode(t *testing.T) {
	dir := t.TempDir()
	nan := stereoFloatWAV([]float32{0, 0, float32(math.NaN()), 0}, 48000)
	p := filepath.Join(dir, "nan.wav")
	os.WriteFile(p, nan, 0o644)
	_, derr := (Decoder{}).Decode(context.Background(), p)
	_, oerr := (Decoder{}).Open(context.Background(), p)
	if derr == nil || oerr == nil || derr.Error() != oerr.Error() {
		t.Errorf("NaN: Open says %v, Decode %v", oerr, derr)
	}
	os.WriteFile(p, nan[:len(nan)-3], 0o644)
	_, derr = (Decoder{}).Decode(context.Background(), p)
	_, oerr = (Decoder{}).Open(context.Background(), p)
	if derr == nil || oerr == nil || derr.Error() != oerr.Error() {
		t.Errorf("truncated: Open says %v, Decode %v", oerr, derr)
	}
	// 13 h at 1 kHz, 16-bit mono: 94 MB, sparse
	long := filepath.Join(dir, "long.wav")
	n := 13 * 3600 * 1000
	if err := os.WriteFile(long, WAVHeader(1000, 2*n), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(long, int64(44+2*n)); err != nil {
		t.Fatal(err)
	}
	_, err := (Decoder{}).Open(context.Background(), long)
	var fe *FormatError
	if !errors.Is(err, ErrTooLong) || !errors.As(err, &fe) || fe.Name != long {
		t.Errorf("13 h: want ErrTooLong naming the file, got %v", err)
	}
}

// TestOpenThroughFFmpeg: a clip that is not WAV is decoded by ffmpeg into a
// temporary file, read as Decode reads it, and the temporary is removed at
// Close.
func TestOpenThroughFFmpeg(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	dir := t.TempDir()
	flac := filepath.Join(dir, "speech.flac")
	if out, err := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-i", "testdata/speech.wav", flac).CombinedOutput(); err != nil {
		t.Skipf("ffmpeg cannot write FLAC: %v: %s", err, out)
	}
	a, err := (Decoder{}).Decode(context.Background(), flac)
	if err != nil {
		t.Fatal(err)
	}
	f, err := (Decoder{}).Open(context.Background(), flac)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Prepare([]Clip{{Name: "c", Audio: a}}, Options{})
	got, _ := Prepare([]Clip{{Name: "c", File: f}}, Options{})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("through ffmpeg, prepared in passes differs")
	}
	tmp := f.temp
	if tmp == "" {
		t.Fatal("no temporary")
	}
	f.Close()
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("temporary %s left: %v", tmp, err)
	}
}

// TestOpenRefusesOverTheDataLimit: a WAV declaring one sample frame more
// than MaxDataBytes (a sparse file) is refused from its header, naming the
// field and the limit, before a sample is read.
func TestOpenRefusesOverTheDataLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.wav")
	size := MaxDataBytes + 2
	if err := os.WriteFile(p, WAVHeader(SampleRate, size), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, int64(44+size)); err != nil {
		t.Fatal(err)
	}
	var err error
	n := allocated(func() { _, err = (Decoder{}).Open(context.Background(), p) })
	var fe *FormatError
	if !errors.Is(err, ErrUnsupported) || !errors.As(err, &fe) || fe.Field != "data.size" || fe.Name != p {
		t.Fatalf("want the data.size refusal naming the file, got %v", err)
	}
	if n > 1<<20 {
		t.Errorf("refusing it allocated %d bytes", n)
	}
}
