package saycmd

import (
	"bytes"
	"encoding/binary"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/httpapi"
	"github.com/drama-tts/drama/engine/httpapi/httpapitest"
)

// sentencesPCM is what POST /v1/tts speaks for each sentence, in order.
func sentencesPCM(t *testing.T, url string, sentences ...string) []byte {
	t.Helper()
	var out []byte
	for _, s := range sentences {
		resp, err := http.Post(url+"/v1/tts", "application/json", strings.NewReader(`{"text":"`+s+`","format":"pcm"}`))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", s, resp.StatusCode, b.String())
		}
		out = append(out, b.Bytes()...)
	}
	return out
}

// TestSayLive: --live speaks standard input through /v1/tts/live, sentence
// by sentence, into a WAV file with exact sizes or to standard output as
// WAV or raw PCM; what it cannot do is a usage error naming the flag.
func TestSayLive(t *testing.T) {
	ts := httpapitest.Serve(t, httpapitest.Fake(t, enginetest.NewFake(), httpapi.Config{}).Handler())
	want := sentencesPCM(t, ts.URL, "First words.", "Then more, über alles.")
	text := "First words. Then more, über alles.\n"
	out := filepath.Join(t.TempDir(), "live.wav")
	if err := runSayArgs(t, text, "--live", "-", "--server", ts.URL, "-o", out); err != nil {
		t.Fatal(err)
	}
	wav, _ := os.ReadFile(out)
	if len(wav) < 44 || !bytes.Equal(wav[44:], want) || int(binary.LittleEndian.Uint32(wav[40:])) != len(want) {
		t.Fatalf("live.wav: %d bytes, want a sized WAV of the sentences' %d bytes of PCM", len(wav), len(want))
	}
	for format, header := range map[string]int{"pcm": 0, "wav": 44} {
		ios, in, stdout, _ := cmdtest.IOStreams()
		in.WriteString(text)
		if err := cmdtest.Execute(NewCmd(cmdtest.Factory(ios), nil), "--live", "-", "--server", ts.URL, "-o", "-", "--format", format); err != nil {
			t.Fatal(err)
		}
		if got := stdout.Bytes(); len(got) < header || !bytes.Equal(got[header:], want) {
			t.Fatalf("-o - --format %s: %d bytes, want %d of header and the sentences' PCM", format, len(got), header)
		}
	}
	for _, args := range [][]string{
		{"--live", "Hello."},
		{"--live", "-", "--format", "mp3"},
		{"--live", "-", "--instructions", "whispering"},
		{"Hello.", "--format", "pcm"},
	} {
		err := runSayArgs(t, text, append(args, "--server", ts.URL, "-o", filepath.Join(t.TempDir(), "x.wav"))...)
		if cmdutil.ExitCode(err) != cmdutil.ExitUsage {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	// a voice the server does not have: the session's error, no file
	bad := filepath.Join(t.TempDir(), "bad.wav")
	if err := runSayArgs(t, text, "--live", "-", "--voice", "nobody", "--server", ts.URL, "-o", bad); err == nil || !strings.Contains(err.Error(), "nobody") {
		t.Fatalf("unknown voice: %v", err)
	}
	if _, err := os.Stat(bad); err == nil {
		t.Fatal("a failed session left its file")
	}
}
