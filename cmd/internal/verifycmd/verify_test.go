package verifycmd

import (
	"context"
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
)

func TestNewCmdFlags(t *testing.T) {
	tests := []struct {
		args    string
		want    Options
		wantErr string
	}{
		{args: "", want: Options{Level: "size"}},
		{args: "--level sha256 --workers 3 --pins p.json --no-record", want: Options{Level: "sha256", Workers: 3, PinsFile: "p.json", NoRecord: true}},
		{args: "--level md5", wantErr: `--level: unknown level "md5"`},
		{args: "--workers -1", wantErr: "--workers must be"},
		{args: "extra", wantErr: "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			ios, _, _, _ := cmdutil.Test()
			f := cmdutil.TestFactory(ios)
			var got *Options
			cmd := NewCmd(f, func(_ context.Context, o *Options) error { got = o; return nil })
			cmd.SetArgs(strings.Fields(tt.args))
			cmd.SetOut(ios.ErrOut)
			cmd.SetErr(ios.ErrOut)
			err := cmd.Execute()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Level != tt.want.Level || got.Workers != tt.want.Workers || got.PinsFile != tt.want.PinsFile || got.NoRecord != tt.want.NoRecord {
				t.Fatalf("got %+v, want %+v", *got, tt.want)
			}
		})
	}
}
