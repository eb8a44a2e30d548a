package servecmd

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/cmd/internal/serverec"
	"github.com/drama-tts/drama/voices"
)

// checkVoices checks --voices and --default-voice before the engine starts:
// the directory must exist, and the default voice must be one of its voice
// files' ids.
func checkVoices(opts *Options) error {
	if opts.VoicesDir != "" {
		st, err := os.Stat(opts.VoicesDir)
		switch {
		case err != nil && os.IsNotExist(err):
			return cmdutil.FlagErrorf("--voices %s: no such directory: give a directory of voice files (drama voice check DIR/*.json checks them)", opts.VoicesDir)
		case err != nil:
			return fmt.Errorf("--voices %s: %w", opts.VoicesDir, err)
		case !st.IsDir():
			return cmdutil.FlagErrorf("--voices %s: not a directory: give the directory that holds the voice files", opts.VoicesDir)
		}
	}
	if err := checkVoiceStore(opts); err != nil {
		return err
	}
	if opts.DefaultVoice == "" {
		return nil
	}
	if opts.VoicesDir == "" {
		return cmdutil.FlagErrorf("--default-voice %s: the engine has only the voices of --voices DIR: give --voices with the directory that holds %s.json", opts.DefaultVoice, opts.DefaultVoice)
	}
	ids := voiceIDs(opts.VoicesDir)
	for _, id := range ids {
		if id == opts.DefaultVoice {
			return nil
		}
	}
	have := "none"
	if len(ids) > 0 {
		have = strings.Join(ids, ", ")
	}
	return cmdutil.FlagErrorf("--default-voice %s: not among the voices in %s (%s)", opts.DefaultVoice, opts.VoicesDir, have)
}

// voiceIDs returns the ids of the voice files of dir that parse.
func voiceIDs(dir string) []string {
	names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var ids []string
	for _, name := range names {
		if v, err := voices.ReadFile(name, nil); err == nil {
			ids = append(ids, v.ID)
		}
	}
	sort.Strings(ids)
	return ids
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

// checkVoiceStore checks --voice-store: a directory that exists (a shared
// file system not mounted must not become a directory of this host's own)
// and that this process can write.
func checkVoiceStore(opts *Options) error {
	if opts.VoiceStore == "" {
		return nil
	}
	st, err := os.Stat(opts.VoiceStore)
	switch {
	case err != nil && os.IsNotExist(err):
		return cmdutil.FlagErrorf("--voice-store %s: no such directory: mount the file system the hosts share there, or create the directory (mkdir -m 700 %s)", opts.VoiceStore, opts.VoiceStore)
	case err != nil:
		return fmt.Errorf("--voice-store %s: %w", opts.VoiceStore, err)
	case !st.IsDir():
		return cmdutil.FlagErrorf("--voice-store %s: not a directory: give the directory, on a file system the hosts share, that holds the cloned voices", opts.VoiceStore)
	}
	probe, err := os.CreateTemp(opts.VoiceStore, ".drama-write-check-*")
	if err != nil {
		return fmt.Errorf("--voice-store %s: cannot write there (%w): drama serve saves and deletes clones in it", opts.VoiceStore, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}
