package verifycmd

import (
	"strings"
	"testing"

	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
)

func TestNewCmdFlags(t *testing.T) {
	is := func(w Options) func(*Options) bool {
		return func(got *Options) bool {
			return got.Level == w.Level && got.Workers == w.Workers && got.PinsFile == w.PinsFile && got.NoRecord == w.NoRecord
		}
	}
	args := strings.Fields
	cmdtest.CheckFlags(t, NewCmd, []cmdtest.FlagCase[Options]{
		{Args: args(""), Check: is(Options{Level: "size"})},
		{Args: args("--level sha256 --workers 3 --pins p.json --no-record"), Check: is(Options{Level: "sha256", Workers: 3, PinsFile: "p.json", NoRecord: true})},
		{Args: args("--level md5"), WantErr: `--level: unknown level "md5"`},
		{Args: args("--workers -1"), WantErr: "--workers must be"},
		{Args: args("extra"), WantErr: "unknown command"},
	})
}
