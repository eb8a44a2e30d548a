package native

import (
	"strconv"
)

// Flavor is one build of the native engine: its binaries, the argument
// shapes of its server and its voice encoder, and what it supports. The
// argument shapes beyond the flags named in the deployment notes are defined
// here and nowhere else (see docs/native.md).
type Flavor struct {
	Name         string // "cuda" or "metal"
	GOOS         string // the only OS the build runs on
	ServerBinary string // default file name of the server binary
	EncodeBinary string // default file name of the voice encoder
	MaxFrames    int    // the most max_frames the server accepts; 0: no stated limit
	// DefaultFrames is the --max-frames passed when none is asked for.
	DefaultFrames int
	References    bool   // references accepted in a request
	LongForm      bool   // long form available
	VoiceFormat   string // format of the files in --voices
	// AlwaysGuidance: the build always serves with classifier-free guidance.
	AlwaysGuidance bool
	// VoiceCatalog: the server reads its voices only at start, so a cloned
	// voice is published by restarting it.
	VoiceCatalog bool
	// Variants are the model variants the build serves.
	Variants []string
	// MemoryEstimate is the expected peak memory in bytes per variant: the
	// drop in free memory measured when the model loads.
	MemoryEstimate map[string]uint64
}

// The two builds.
var (
	CUDA = &Flavor{
		Name: "cuda", GOOS: "linux",
		ServerBinary: "tensorfold-native", EncodeBinary: "tensorfold-native",
		DefaultFrames: 1024, References: true, LongForm: true,
		VoiceFormat: "drama3-voice/1",
		Variants:    []string{"full", "nvfp4"},
		// full ~40 GiB, nvfp4 ~20.3 GiB
		MemoryEstimate: map[string]uint64{"full": 40 << 30, "nvfp4": 20788 << 20},
	}
	Metal = &Flavor{
		Name: "metal", GOOS: "darwin",
		ServerBinary: "drama3-generate", EncodeBinary: "drama3-generate",
		MaxFrames: 8190, DefaultFrames: 8190, VoiceFormat: "drama3-http-voice/1",
		AlwaysGuidance: true, VoiceCatalog: true,
		// the Metal build serves the nvfp4 weights
		Variants: []string{"macos"}, MemoryEstimate: map[string]uint64{"macos": 20788 << 20},
	}
)

// ServeOptions are the settings turned into the server's flags.
type ServeOptions struct {
	Port         int
	Model        string // directory of the variant's weights
	Codec        string // path of codec.pth
	Variant      string // full, nvfp4 or macos
	MaxFrames    int    // 0: the flavor's default (1024 on CUDA, 8190 on Metal)
	Voices       string // voices directory, or ""
	DefaultVoice string
	LongForm     bool // CUDA only
	// LongFormChars is the segment length of long form; 0: 500.
	LongFormChars int
	// LongFormHistory is how many earlier segments each segment is
	// conditioned on; nil: 1.
	LongFormHistory *int
	NoGuidance      bool // serve nvfp4 without --cfg-gamma 1.5 --cfg-batched
	Extra           []string
}

// Long-form defaults, the deployment notes' settings.
const (
	DefaultLongFormChars   = 500
	DefaultLongFormHistory = 1
)

// Guidance reports whether the server runs with classifier-free guidance:
// always on Metal, for nvfp4 on CUDA unless turned off.
func (f *Flavor) Guidance(o ServeOptions) bool {
	return f.AlwaysGuidance || (o.Variant == "nvfp4" && !o.NoGuidance)
}

// ServeArgs returns the server's arguments. CUDA:
//
//	serve --port P --parallel 1 --prompt-cache-gib 0 --max-frames N
//	      [--model DIR] [--codec PATH] [--voices DIR] [--default-voice ID]
//	      [--long-form --long-form-chars C --long-form-history H]
//	      [--cfg-gamma 1.5 --cfg-batched]
//
// C and H are LongFormChars and LongFormHistory, 500 and 1 unless set.
//
// Metal: "--serve" in place of "serve --parallel 1 --prompt-cache-gib 0",
// no long form, guidance always on.
func (f *Flavor) ServeArgs(o ServeOptions) []string {
	frames := o.MaxFrames
	if frames == 0 {
		frames = f.DefaultFrames
	}
	var a []string
	if f == Metal {
		a = []string{"--serve", "--port", strconv.Itoa(o.Port)}
	} else {
		a = []string{"serve", "--port", strconv.Itoa(o.Port), "--parallel", "1", "--prompt-cache-gib", "0"}
	}
	a = append(a, "--max-frames", strconv.Itoa(frames))
	a = appendIf(a, o.Model != "", "--model", o.Model)
	a = appendIf(a, o.Codec != "", "--codec", o.Codec)
	a = appendIf(a, o.Voices != "", "--voices", o.Voices)
	a = appendIf(a, o.DefaultVoice != "", "--default-voice", o.DefaultVoice)
	chars, history := DefaultLongFormChars, DefaultLongFormHistory
	if o.LongFormChars > 0 {
		chars = o.LongFormChars
	}
	if o.LongFormHistory != nil {
		history = *o.LongFormHistory
	}
	a = appendIf(a, f.LongForm && o.LongForm, "--long-form", "--long-form-chars", strconv.Itoa(chars), "--long-form-history", strconv.Itoa(history))
	a = appendIf(a, f.Guidance(o), "--cfg-gamma", "1.5", "--cfg-batched")
	return append(a, o.Extra...)
}

// EncodeArgs returns the voice encoder's arguments for one clip. CUDA:
// "voice encode --codec CODEC --audio CLIP --out OUT"; Metal:
// "--codec CODEC --ref-audio CLIP --encode OUT". Either writes a codes file
// (see ReadCodes) at OUT.
func (f *Flavor) EncodeArgs(codec, clip, out string) []string {
	if f == Metal {
		return []string{"--codec", codec, "--ref-audio", clip, "--encode", out}
	}
	return []string{"voice", "encode", "--codec", codec, "--audio", clip, "--out", out}
}

func appendIf(a []string, ok bool, v ...string) []string {
	if ok {
		return append(a, v...)
	}
	return a
}
