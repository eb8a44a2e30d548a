package voices

import (
	"errors"
	"strings"
	"testing"
)

// A file that is not a JSON object is named for what it is, with the offset.
func TestParseSaysWhatAFileThatIsNotAVoiceIs(t *testing.T) {
	for _, tt := range []struct {
		name, data string
		sentinel   error
		want       string
	}{
		{"text", "hello world\n", ErrSyntax, "offset 0: invalid JSON: the file is not JSON: it begins with byte 0x68 ('h'); a voice file is a JSON object"},
		{"indented text", "\n  hello", ErrSyntax, "offset 3: invalid JSON: the file is not JSON: it begins with byte 0x68"},
		{"binary", "\x00\x01", ErrSyntax, "the file is not JSON: it begins with byte 0x00"},
		{"wav", "RIFF\x24\x00\x00\x00WAVEfmt ", ErrSyntax, "it looks like audio: drama voice prepare and drama encode take recordings"},
		{"empty", " \n", ErrSyntax, "the file is empty: want a voice file's JSON object"},
		{"null", "null", ErrType, "want a voice file's JSON object, got null"},
		{"array", "[1, 2]", ErrType, "want a voice file's JSON object, got an array"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.data), nil)
			if !errors.Is(err, tt.sentinel) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant %v containing %q", err, tt.sentinel, tt.want)
			}
			if strings.Contains(err.Error(), "end of file") && strings.TrimSpace(tt.data) != "" {
				t.Errorf("%q is not the end of the file: %v", tt.data, err)
			}
		})
	}
}
