package shared_test

import (
	"testing"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/pinscmd/shared"
)

// TestCommandLineQuotesWhatAShellWouldRead: a flag value holding a
// character a shell reads specially (a carriage return, a caret, a
// non-ASCII letter) is quoted, as every other piece of advice quotes it,
// and a plain one is not.
func TestCommandLineQuotesWhatAShellWouldRead(t *testing.T) {
	root := &cobra.Command{Use: "drama"}
	root.PersistentFlags().String("root", "", "")
	var got string
	lock := &cobra.Command{Use: "lock", RunE: func(cmd *cobra.Command, _ []string) error {
		got = shared.CommandLine(cmd)
		return nil
	}}
	lock.Flags().String("pins", "", "")
	lock.Flags().String("output", "", "")
	lock.Flags().Bool("force", false, "")
	root.AddCommand(lock)
	root.SetArgs([]string{"lock", "--root", "/srv/drama", "--pins", "my\rpins^é.json", "--output", "", "--force"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	want := "drama lock --root /srv/drama --force --output '' --pins 'my\rpins^é.json'"
	if got != want {
		t.Errorf("CommandLine:\n got %q\nwant %q", got, want)
	}
}
