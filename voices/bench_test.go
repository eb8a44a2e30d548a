package voices

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// benchVoice returns a drama3-voice/1 file of exactly 256 KiB: eight
// references of 161 or 162 frames (1292 in all, the 60 s limit) with
// 990-character transcripts, pretty-printed one code a line as Python's
// json.dump(indent=2) would, padded with white space.
func benchVoice(tb testing.TB) []byte {
	tb.Helper()
	type ref struct {
		Text   string  `json:"text"`
		Frames int     `json:"frames"`
		SHA    string  `json:"codes_sha256"`
		VQ     [][]int `json:"vq_codes"`
	}
	doc := struct {
		Format string `json:"format"`
		ID     string `json:"id"`
		Name   string `json:"name"`
		Refs   []ref  `json:"references"`
	}{Format: string(FormatCUDA), ID: "bench", Name: "Bench"}
	for i, frames := range []int{161, 161, 162, 162, 161, 161, 162, 162} {
		c := makeCodes(frames, i)
		doc.Refs = append(doc.Refs, ref{Text: strings.Repeat("語", 990), Frames: frames, SHA: c.SHA256(), VQ: c})
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	const size = 256 << 10
	if len(data) > size-1 {
		tb.Fatalf("bench voice is %d bytes, over %d", len(data), size)
	}
	data = append(data[:len(data)-1], bytes.Repeat([]byte(" "), size-len(data)-1)...)
	return append(data, "}\n"...)
}

func TestBenchVoiceIsValid(t *testing.T) {
	data := benchVoice(t)
	v, err := Parse(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 256<<10 || v.TotalFrames() != MaxTotalFrames {
		t.Fatalf("%d bytes, %d frames", len(data), v.TotalFrames())
	}
	conv, err := Convert(v, FormatMetal, ConvertOptions{Source: SourceSynthetic})
	if err != nil || len(conv.Joins) != 4 {
		t.Fatalf("joins %v, err %v", conv, err)
	}
}

// BenchmarkConvert256KiB reads a 256 KiB drama3-voice/1 file, checks it,
// converts it to drama3-http-voice/1 (packing eight references into four)
// and writes the canonical output.
func BenchmarkConvert256KiB(b *testing.B) {
	data := benchVoice(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		v, err := Parse(data, nil)
		if err != nil {
			b.Fatal(err)
		}
		conv, err := Convert(v, FormatMetal, ConvertOptions{Source: SourceSynthetic})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Marshal(conv.Voice, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParse256KiB is the reading and checking part of the above.
func BenchmarkParse256KiB(b *testing.B) {
	data := benchVoice(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStdlibUnmarshal256KiB decodes the same file with encoding/json
// into plain structs, without any checks: a reference point for Parse.
func BenchmarkStdlibUnmarshal256KiB(b *testing.B) {
	data := benchVoice(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var doc struct {
		Refs []struct {
			Text string  `json:"text"`
			VQ   [][]int `json:"vq_codes"`
		} `json:"references"`
	}
	for b.Loop() {
		if err := json.Unmarshal(data, &doc); err != nil {
			b.Fatal(err)
		}
	}
}
