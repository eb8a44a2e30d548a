package cmdutil

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestTableTTYAndPiped(t *testing.T) {
	ios, _, out, _ := testStreams()
	tb := NewTable(ios, "path", "status")
	tb.AddRow("a.bin", "ok")
	tb.AddRow("long/name\twith tab", "missing")
	if err := tb.Render(); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "a.bin\tok\nlong/name with tab\tmissing\n"; got != want {
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
