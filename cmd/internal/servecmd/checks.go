package servecmd

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/serverec"
	"github.com/drama-tts/drama/engine/serve"
)

// settingFlags are the flags of serve.SettingError's settings.
var settingFlags = map[string]string{"VoicesDir": "--voices", "DefaultVoice": "--default-voice", "VoiceStore": "--voice-store"}

// checkVoices checks --voices, --default-voice and --voice-store before
// the engine starts (serve.CheckVoices), a refusal told as its flag's.
func checkVoices(opts *Options) error {
	err := serve.CheckVoices(opts.VoicesDir, opts.DefaultVoice, opts.VoiceStore)
	var se *serve.SettingError
	if !errors.As(err, &se) {
		return err
	}
	err = fmt.Errorf("%s %s: %w", settingFlags[se.Setting], se.Value, se.Err)
	if se.Usage {
		return cmdutil.FlagErrorf("%w", err)
	}
	return err
}

// checkNotServing refuses a second drama serve on one root: the engine's
// runtime files and cloned voices are the root's, so one server owns them.
func checkNotServing(f *cmdutil.Factory, root string) error {
	recs, err := serverec.List(root)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.PID == os.Getpid() {
			continue
		}
		return fmt.Errorf("drama serve (pid %d, http://%s, variant %s, since %s) already serves %s: stop it (kill -INT %d) or start this one with another --root",
			r.PID, r.Addr, r.Variant, r.Started.Local().Format(time.DateTime), root, r.PID)
	}
	return nil
}
