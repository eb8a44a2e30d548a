package cmdutil

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/internal/safetext"
)

func TestTableTTYAndPiped(t *testing.T) {
	ios, _, out, _ := testStreams()
	tb := NewTable(ios, "path", "status")
	tb.AddRow("a.bin", "ok")
	tb.AddRow("long/name\twith tab", "missing")
	if err := tb.Render(); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "a.bin\tok\nlong/name\\twith tab\tmissing\n"; got != want {
		t.Fatalf("piped:\n%q\nwant\n%q", got, want)
	}
	out.Reset()
	ios.SetStdoutTTY(true)
	if err := tb.Render(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "PATH") || strings.Contains(out.String(), "\t") {
		t.Fatalf("tty:\n%s", out.String())
	}
}

// TestTableEscapesOutsideText: cells that came from outside (file names
// from a Hub, a voice's transcript) with terminal escapes, line feeds,
// tabs, DEL, C1 and bidi overrides are shown escaped on a terminal and in
// TSV, one row a line and one cell a column; the same text as --json
// stays the text itself, encoded.
func TestTableEscapesOutsideText(t *testing.T) {
	evil := []string{"esc\x1b]0;PWNED\x07\x1b[31mred.txt", "a\nINJECTED: drama verified OK.txt", "tab\there\x7f", "c1\u009b31m \u202egnp.exe", "voix-élodie"}
	want := []string{`esc\x1b]0;PWNED\x07\x1b[31mred.txt`, `a\nINJECTED: drama verified OK.txt`, `tab\there\x7f`, `c1\u009b31m \u202egnp.exe`, "voix-élodie"}
	for _, tty := range []bool{false, true} {
		ios, _, out, _ := testStreams()
		ios.SetStdoutTTY(tty)
		tb := NewTable(ios, "path", "size")
		for _, e := range evil {
			tb.AddRow(e, "1 B")
		}
		if err := tb.Render(); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if tty {
			lines = lines[1:] // the header
		}
		if len(lines) != len(evil) {
			t.Fatalf("tty %v: want %d rows, got %d:\n%s", tty, len(evil), len(lines), out.String())
		}
		for i, l := range lines {
			cell := strings.TrimRight(strings.SplitN(l, "\t", 2)[0], " ")
			if tty {
				cell = strings.TrimSuffix(strings.TrimRight(l, " "), "1 B")
				cell = strings.TrimRight(cell, " ")
			}
			if cell != want[i] {
				t.Errorf("tty %v row %d: cell %q, want %q", tty, i, cell, want[i])
			}
			if strings.ContainsFunc(l, func(r rune) bool { return r != '\t' && safetext.Escapes(r) }) {
				t.Errorf("tty %v row %d holds a control character: %q", tty, i, l)
			}
		}
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, evil); err != nil {
		t.Fatal(err)
	}
	var back []string
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || strings.Join(back, "|") != strings.Join(evil, "|") {
		t.Fatalf("--json must carry the text itself: got %q (%v)", back, err)
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 41474674072: "38.6 GiB"} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestLineProgressAtMostEveryInterval(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	p := newLineProgress(&buf, "fetch", 100, func() time.Time { return now })
	for i := 0; i < 50; i++ {
		now = now.Add(time.Second)
		p.Add(1)
	}
	p.Finish()
	p.Finish()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	// 50 s of updates: lines at 10, 20, 30, 40, 50 s, plus the final one
	if len(lines) != 6 {
		t.Fatalf("got %d lines:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[5], "50 B of 100 B (50.0%)") {
		t.Fatalf("last line %q", lines[5])
	}
}

func TestNewProgressQuietOrJSONPrintsNothing(t *testing.T) {
	ios, _, _, errOut := testStreams()
	f := testFactory(ios)
	f.Global.Quiet = true
	p := f.NewProgress("x", 10)
	p.Add(10)
	p.Finish()
	f.Global.Quiet, f.Global.JSON = false, true
	p = f.NewProgress("x", 10)
	p.Add(10)
	p.Finish()
	if errOut.Len() != 0 {
		t.Fatalf("stderr: %q", errOut.String())
	}
}

func TestRootResolution(t *testing.T) {
	ios, _, _, _ := testStreams()
	cases := []struct {
		flag string
		env  []string
		want string
	}{
		{"/r", []string{"DRAMA_HOME", "/d"}, "/r"},
		{"", []string{"DRAMA_HOME", "/d", "XDG_DATA_HOME", "/x"}, "/d"},
		{"", []string{"XDG_DATA_HOME", "/x", "HOME", "/h"}, "/x/drama"},
		{"", []string{"HOME", "/h"}, "/h/.local/share/drama"},
	}
	for _, c := range cases {
		f := testFactory(ios, c.env...)
		f.Global.Root = c.flag
		if got, _ := f.Root(); got != c.want {
			t.Errorf("Root() = %q, want %q", got, c.want)
		}
	}
}
