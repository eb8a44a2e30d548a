package voices

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func refsOf(frames ...int) []Reference {
	out := make([]Reference, len(frames))
	for i, f := range frames {
		out[i] = Reference{Text: fmt.Sprintf("r%d", i), Codes: makeCodes(f, i)}
	}
	return out
}

func TestPack(t *testing.T) {
	cases := []struct {
		name   string
		frames []int
		want   []int    // frames after packing
		texts  []string // transcripts after packing
		joins  []Join
	}{
		{"five", []int{100, 50, 60, 200, 300}, []int{100, 110, 200, 300}, []string{"r0", "r1 r2", "r3", "r4"},
			[]Join{{1, 2, 110}}},
		{"six with tie leftmost", []int{10, 10, 10, 10, 500, 500}, []int{20, 20, 500, 500}, []string{"r0 r1", "r2 r3", "r4", "r5"},
			[]Join{{0, 1, 20}, {2, 3, 20}}},
		{"seven chain", []int{5, 5, 5, 600, 5, 5, 5}, []int{15, 600, 10, 5}, []string{"r0 r1 r2", "r3", "r4 r5", "r6"},
			[]Join{{0, 1, 10}, {4, 5, 10}, {0, 2, 15}}},
		{"eight", []int{80, 80, 80, 80, 80, 80, 80, 80}, []int{160, 160, 160, 160}, []string{"r0 r1", "r2 r3", "r4 r5", "r6 r7"},
			[]Join{{0, 1, 160}, {2, 3, 160}, {4, 5, 160}, {6, 7, 160}}},
		{"skips a pair over the limit", []int{400, 300, 600, 40, 20}, []int{400, 300, 600, 60}, []string{"r0", "r1", "r2", "r3 r4"},
			[]Join{{3, 4, 60}}},
		{"join exactly 646", []int{600, 46, 600, 600, 600}, []int{646, 600, 600, 600}, []string{"r0 r1", "r2", "r3", "r4"},
			[]Join{{0, 1, 646}}},
		{"four untouched", []int{1, 2, 3, 4}, []int{1, 2, 3, 4}, []string{"r0", "r1", "r2", "r3"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := refsOf(c.frames...)
			out, joins, err := Pack(in, MaxMetalReferences)
			if err != nil {
				t.Fatal(err)
			}
			var frames []int
			var texts []string
			for _, r := range out {
				frames = append(frames, r.Codes.Frames())
				texts = append(texts, r.Text)
			}
			if !reflect.DeepEqual(frames, c.want) || !reflect.DeepEqual(texts, c.texts) || !reflect.DeepEqual(joins, c.joins) {
				t.Errorf("got frames %v texts %q joins %v, want %v %q %v", frames, texts, joins, c.want, c.texts, c.joins)
			}
			checkCodesEndToEnd(t, in, out)
		})
	}
}

// checkCodesEndToEnd checks that every codebook of the packed references,
// laid end to end, equals the input's.
func checkCodesEndToEnd(t *testing.T, in, out []Reference) {
	t.Helper()
	for cb := range NumCodebooks {
		var a, b []int
		for _, r := range in {
			a = append(a, r.Codes[cb]...)
		}
		for _, r := range out {
			b = append(b, r.Codes[cb]...)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("codebook %d changed by packing", cb)
		}
	}
}

func TestPackNoFit(t *testing.T) {
	in := refsOf(400, 300, 600, 400, 300)
	_, _, err := Pack(in, MaxMetalReferences)
	if !errors.Is(err, ErrNoFit) {
		t.Fatalf("err = %v, want ErrNoFit", err)
	}
	if !strings.Contains(err.Error(), "400, 300, 600, 400, 300") {
		t.Errorf("error does not list the frames: %v", err)
	}
	if in[0].Codes.Frames() != 400 || len(in) != 5 {
		t.Error("Pack changed its input")
	}
}

func TestConvertPacksForMetal(t *testing.T) {
	v := &Voice{Format: FormatCloned, ID: "six", Name: "Six", Source: SourceSynthetic, Created: v0time}
	for i, f := range []int{100, 50, 60, 200, 30, 20} {
		v.References = append(v.References, Reference{Text: fmt.Sprintf("part %d.", i), Samples: f * 2048, Codes: makeCodes(f, i)})
	}
	conv, err := Convert(v, FormatMetal, ConvertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(conv.Voice.References) != 4 || len(conv.Joins) != 2 {
		t.Fatalf("got %d references, %d joins", len(conv.Voice.References), len(conv.Joins))
	}
	want := []Join{{4, 5, 50}, {1, 2, 110}}
	if !reflect.DeepEqual(conv.Joins, want) {
		t.Errorf("joins %v, want %v", conv.Joins, want)
	}
	if got := conv.Voice.References[1].Text; got != "part 1. part 2." {
		t.Errorf("joined text %q", got)
	}
	checkGolden(t, "cloned6-to-metal.json", mustMarshal(t, conv.Voice))
}

// Within 60 s a voice of at most 1292 frames always packs into four, so
// only a cloned voice, whose frames round each reference's samples up, can
// fail: 1 + 646 + 1 + 646 + 1 frames leave every adjacent pair at 647.
func TestConvertNoFitForMetal(t *testing.T) {
	v := &Voice{Format: FormatCloned, ID: "five", Name: "Five", Source: SourceSynthetic, Created: v0time}
	for i, f := range []int{1, 646, 1, 646, 1} {
		samples := 1
		if f > 1 {
			samples = (f-1)*SamplesPerFrame + 1
		}
		v.References = append(v.References, Reference{Text: fmt.Sprintf("p%d", i), Samples: samples, Codes: makeCodes(f, i)})
	}
	if _, err := Convert(v, FormatMetal, ConvertOptions{}); !errors.Is(err, ErrNoFit) {
		t.Errorf("err = %v, want ErrNoFit", err)
	}
	v.References[4].Codes = makeCodes(1, 9)
	v.References = v.References[:4]
	if _, err := Convert(v, FormatMetal, ConvertOptions{}); err != nil {
		t.Errorf("four references: %v", err)
	}
}
