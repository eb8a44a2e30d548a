package clip

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestDecodeADirectorySaysSo(t *testing.T) {
	dir := t.TempDir()
	_, err := Decoder{FFmpeg: "no-such-ffmpeg"}.Decode(context.Background(), dir)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), dir+": a directory, not a clip") || strings.Contains(err.Error(), "ffmpeg") {
		t.Fatalf("err = %v", err)
	}
}
