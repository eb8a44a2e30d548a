package serve

import (
	"strings"
	"testing"
)

func TestParseNvidiaSMI(t *testing.T) {
	got, err := parseNvidiaSMI([]byte("0, 143771, 512\n 1,143771,100000 \n\n"))
	if err != nil || len(got) != 2 || got[0] != (gpuMemory{0, 143771, 512}) || got[1] != (gpuMemory{1, 143771, 100000}) {
		t.Fatalf("parse: %+v %v", got, err)
	}
	for in, want := range map[string]string{
		"":                  "no GPU",
		"0, 143771":         "want index, memory.total, memory.used",
		"0, [N/A], 512":     "field 2 is not a number ([N/A])",
		"0, 1, 2\nGPU 1, 2": "line 2",
	} {
		if _, err := parseNvidiaSMI([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error about %s", in, err, want)
		}
	}
}
