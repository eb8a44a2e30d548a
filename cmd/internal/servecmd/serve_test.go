package servecmd

import (
	"strings"
	"testing"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil/cmdtest"
)

func TestServeFlags(t *testing.T) {
	args := strings.Fields
	cmdtest.CheckFlags(t, NewCmd, append(refused(map[string]string{
		"--addr 0.0.0.0:8793": "not a loopback address",
		"--addr nonsense":     "want HOST:PORT",
		"--admission maybe":   "want own, external or off",
		"--max-queue -1":      "--max-queue",
		"--max-frames -3":     "--max-frames",
	}), []cmdtest.FlagCase[Options]{
		{Args: args("positional"), WantErr: "unknown command"},
		{Args: args("--engine metal --max-queue 4 --queue-timeout 3s --admission off --addr 127.0.0.1:9999"), Check: func(got *Options) bool {
			return got.Engine == "metal" && got.MaxQueue == 4 && got.QueueTimeout == 3*time.Second && got.Admission == "off" && got.Addr == "127.0.0.1:9999"
		}},
		{Args: args("--addr 0.0.0.0:8793 --allow-remote --no-auth"), Check: accepted},
		{Args: args("--addr [::1]:8793"), Check: accepted}, // the IPv6 loopback
	}...))
}

func TestServeVoiceFlags(t *testing.T) {
	args := strings.Fields
	builtin := func(name string) func(*Options) bool {
		return func(got *Options) bool { return got.builtinVoice() == name }
	}
	cmdtest.CheckFlags(t, NewCmd, []cmdtest.FlagCase[Options]{
		// a fresh install serves the built-in voice as "default"
		{Args: nil, Check: func(got *Options) bool { return got.builtinVoice() == "default" && len(got.aliases) == 0 }},
		{Args: args("--voice-alias alloy=narrator --voice-alias echo=default --voice-alias Anna=alice"), Check: func(got *Options) bool {
			return got.aliases["alloy"] == "narrator" && got.aliases["echo"] == "default" && got.aliases["Anna"] == "alice" && len(got.aliases) == 3
		}},
		{Args: args("--no-builtin-voice"), Check: builtin("")},
		{Args: args("--builtin-voice house"), Check: builtin("house")},
	})
	cmdtest.CheckFlags(t, NewCmd, refused(map[string]string{
		"--voice-alias alloy":                                  "--voice-alias alloy: want NAME=VOICE",
		"--voice-alias alloy=a --voice-alias alloy=b":          "--voice-alias alloy given twice",
		"--voice-alias default=narrator":                       "--voice-alias default=narrator: default is the built-in voice's name",
		"--voice-alias alloy=Not_A_Voice":                      "--voice-alias alloy=Not_A_Voice: ",
		"--voice-alias alloy=echo --voice-alias echo=narrator": "--voice-alias alloy=echo: echo is itself an alias",
		"--builtin-voice Bad!":                                 "--builtin-voice",
	}))
}
