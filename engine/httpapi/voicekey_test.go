package httpapi

import (
	"testing"

	"github.com/drama-tts/drama/engine"
)

// refsRequest is a request for voice with one reference of 10 codebooks
// of 750 frames, its codes from seed.
func refsRequest(voice string, seed int) engine.SynthesisRequest {
	codes := make([][]int, 10)
	for i := range codes {
		codes[i] = make([]int, 750)
		for j := range codes[i] {
			codes[i][j] = (seed + i*7919 + j*104729) % 4096
		}
	}
	return engine.SynthesisRequest{Voice: voice, References: []engine.Reference{{Text: "a reference", Codes: codes}}}
}

// TestVoiceKey: the same voice and references give the same key; another
// voice, text, code or split of the codes into rows another.
func TestVoiceKey(t *testing.T) {
	a := voiceKey(refsRequest("clone", 1))
	if b := voiceKey(refsRequest("clone", 1)); a != b {
		t.Fatalf("the same request gave keys %s and %s", a, b)
	}
	if voiceKey(engine.SynthesisRequest{Voice: "alloy"}) != "voice:alloy" {
		t.Fatal("a voice without references is keyed by more than its name")
	}
	text := refsRequest("clone", 1)
	text.References[0].Text = "another reference"
	code := refsRequest("clone", 1)
	code.References[0].Codes[9][749]++
	split := refsRequest("clone", 1)
	split.References[0].Codes[0], split.References[0].Codes[1] = split.References[0].Codes[0][:749], append(split.References[0].Codes[0][749:], split.References[0].Codes[1]...)
	for name, req := range map[string]engine.SynthesisRequest{"voice": refsRequest("other", 1), "text": text, "code": code, "rows": split} {
		if k := voiceKey(req); k == a {
			t.Errorf("another %s gave the same key %s", name, k)
		}
	}
}

// BenchmarkVoiceKey keys a request with 7500 reference codes, as each
// request with references is keyed before it queues.
func BenchmarkVoiceKey(b *testing.B) {
	req := refsRequest("clone", 1)
	b.ReportAllocs()
	for b.Loop() {
		voiceKey(req)
	}
}
