package statuscmd

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
	"github.com/drama-tts/drama/cmd/internal/serverec"
)

// server starts a process that, like drama serve, takes a moment after
// SIGTERM to finish and exit, and records it under root as serving variant.
func server(t *testing.T, root, variant string) (*exec.Cmd, chan error) {
	t.Helper()
	cmd := exec.Command("sh", "-c", `trap 'sleep 0.2; exit 0' TERM; echo up; while :; do sleep 0.05; done`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	if _, err := out.Read(make([]byte, 3)); err != nil { // the trap is set
		t.Fatal(err)
	}
	rec := serverec.Record{PID: cmd.Process.Pid, Addr: "127.0.0.1:8793", Variant: variant, Root: root, Started: now, Grace: "1s"}
	if _, err := serverec.Write(root, rec); err != nil {
		t.Fatal(err)
	}
	return cmd, done
}

func TestStopSendsSIGTERMAndWaits(t *testing.T) {
	ios, _, out, errOut := cmdtest.IOStreams()
	f := cmdtest.Factory(ios)
	f.Global.Root = t.TempDir()
	_, done := server(t, f.Global.Root, "nvfp4")
	// Another variant is named: an error naming the one that runs, and
	// nothing stopped.
	err := cmdtest.Execute(NewCmdStop(f, nil), "full")
	if cmdutil.ExitCode(err) != cmdutil.ExitFailure || !strings.Contains(err.Error(), "no drama serve of full runs on "+f.Global.Root+"; running: nvfp4 (pid ") ||
		!strings.HasSuffix(err.Error(), ": run drama stop nvfp4 --root "+f.Global.Root) {
		t.Fatalf("other variant: %v", err)
	}
	if err := cmdtest.Execute(NewCmdStop(f, nil), "nvfp4"); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the server did not end by its SIGTERM trap: %v", err)
		}
	default:
		t.Fatal("drama stop returned while the server still ran")
	}
	if !strings.HasPrefix(out.String(), "stopped drama serve (pid ") || !strings.Contains(errOut.String(), "SIGTERM sent; waiting up to 7s (its grace 1s") {
		t.Fatalf("out %q err %q", out, errOut)
	}
	// Nothing runs now: nothing to stop, exit 0.
	if err := cmdtest.Execute(NewCmdStop(f, nil)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "no drama serve runs on "+f.Global.Root+": nothing to stop") {
		t.Fatalf("err %q", errOut)
	}
	out.Reset()
	f.Global.JSON = true
	if err := cmdtest.Execute(NewCmdStop(f, nil)); err != nil {
		t.Fatal(err)
	}
	var rep StopReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Root != f.Global.Root || len(rep.Stopped) != 0 {
		t.Fatalf("%v %q", err, out)
	}
}

func TestStopArgs(t *testing.T) {
	cmdtest.CheckFlags(t, NewCmdStop, []cmdtest.FlagCase[StopOptions]{
		{Args: nil, Check: func(o *StopOptions) bool { return o.Variant == "" }},
		{Args: []string{"macos"}, Check: func(o *StopOptions) bool { return o.Variant == "macos" }},
		{Args: []string{"bogus"}, WantErr: `unknown variant "bogus"`},
		{Args: []string{"full", "nvfp4"}, WantErr: "accepts at most 1 arg"},
	})
}
