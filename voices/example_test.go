package voices_test

import (
	"fmt"
	"log"
	"os"

	"github.com/drama-tts/drama/voices"
)

// Convert a CUDA server voice to a Metal catalog entry. The CUDA format
// carries no source attestation, so the conversion needs one.
func ExampleConvert() {
	v, err := voices.ReadFile("testdata/cuda.json", nil)
	if err != nil {
		log.Fatal(err)
	}
	conv, err := voices.Convert(v, voices.FormatMetal, voices.ConvertOptions{Source: voices.SourceSynthetic, Note: "fixture voice"})
	if err != nil {
		log.Fatal(err)
	}
	out, err := voices.Marshal(conv.Voice, nil)
	if err != nil {
		log.Fatal(err)
	}
	want, _ := os.ReadFile("testdata/metal.json")
	fmt.Println(conv.Voice.Format, len(conv.Voice.References), string(out) == string(want))
	for _, r := range conv.Voice.References {
		fmt.Println(r.Codes.Frames(), r.Codes.SHA256()[:16])
	}
	// Output:
	// drama3-http-voice/1 2 true
	// 7 6fea0bb5ea69eef2
	// 5 1196254c7301bc8b
}

// Check a request's reference before it reaches the engine.
func ExampleReference_Validate() {
	r := voices.Reference{Text: "Hello <think> there", Codes: make(voices.Codes, voices.NumCodebooks)}
	for cb := range r.Codes {
		r.Codes[cb] = []int{1, 2, 3}
	}
	fmt.Println(r.Validate(nil))
	// Output:
	// voices: text: transcript not allowed: holds the tokenizer's special token "<think>" at byte 6: remove it
}
