package supervise

import (
	"errors"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/drama-tts/drama/engine"
)

// maxBrief bounds a message of Status.
const maxBrief = 200

// absPath finds an absolute file path in a line, after a space, a quote,
// a parenthesis or an equals sign.
var absPath = regexp.MustCompile(`(^|[\s'"(=])(/[^\s'":,;)]+)`)

// Brief shortens a message for Status: its first line, without the
// engine's output that follows "its last output", each absolute path cut
// to its base name, at most 200 bytes.
func Brief(msg string) string {
	msg, _, _ = strings.Cut(msg, "\n")
	if i := strings.Index(msg, "; its last output"); i >= 0 {
		msg = msg[:i]
	}
	msg = absPath.ReplaceAllStringFunc(msg, func(m string) string {
		lead := absPath.FindStringSubmatch(m)
		return lead[1] + filepath.Base(lead[2])
	})
	msg = strings.TrimRight(strings.TrimSpace(msg), ":")
	if len(msg) > maxBrief {
		msg = strings.ToValidUTF8(msg[:maxBrief], "") + "..."
	}
	return msg
}

// Summary is the short cause of a failure for Status: Brief of the error
// without the packages' prefixes, and where the engine left output, a
// pointer to the log that holds it.
func Summary(err error) string {
	if err == nil {
		return ""
	}
	text := err.Error()
	for _, p := range []string{"engine: ", "start: ", "native: "} {
		text = strings.TrimPrefix(text, p)
	}
	s := Brief(text)
	var ee *engine.Error
	if strings.Contains(text, "its last output") || (errors.As(err, &ee) && ee.LogTail != "") {
		s += "; see the engine log"
	}
	return s
}
