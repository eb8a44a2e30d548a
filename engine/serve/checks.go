package serve

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/drama-tts/drama/voices"
)

// SettingError is a setting drama serve cannot start with, found before
// anything starts: Setting names it as Config does (VoicesDir,
// DefaultVoice, VoiceStore), Value is what it was given and Err says why.
// Usage is true when the value itself is wrong (the command's usage
// error), false when the system refused it (a permission, a read).
type SettingError struct {
	Setting, Value string
	Err            error
	Usage          bool
}

// Error names the setting, its value and why it is refused.
func (e *SettingError) Error() string { return e.Setting + " " + e.Value + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *SettingError) Unwrap() error { return e.Err }

// CheckVoices checks, before the engine starts, the operator's directory
// of voice files (voicesDir, "" for none), that defaultVoice ("" for none)
// is one of its voice files' ids, and the directory of clones (voiceStore,
// "" for the root's). The errors are *SettingError.
func CheckVoices(voicesDir, defaultVoice, voiceStore string) error {
	if voicesDir != "" {
		if err := checkDir("VoicesDir", voicesDir, "give a directory of voice files (drama voice check DIR/*.json checks them)",
			"give the directory that holds the voice files"); err != nil {
			return err
		}
	}
	if err := checkVoiceStore(voiceStore); err != nil {
		return err
	}
	if defaultVoice == "" || voicesDir == "" {
		return nil
	}
	ids := VoiceIDs(voicesDir)
	if slices.Contains(ids, defaultVoice) {
		return nil
	}
	have := "none"
	if len(ids) > 0 {
		have = strings.Join(ids, ", ")
	}
	return &SettingError{Setting: "DefaultVoice", Value: defaultVoice, Usage: true,
		Err: fmt.Errorf("not among the voices in %s (%s)", voicesDir, have)}
}

// checkDir checks that dir, the value of setting, is a directory; the
// advice follows a refusal for a directory missing, or another file there.
func checkDir(setting, dir, missing, notDir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return &SettingError{Setting: setting, Value: dir, Usage: true, Err: errors.New("no such directory: " + missing)}
	case err != nil:
		return &SettingError{Setting: setting, Value: dir, Err: err}
	case !st.IsDir():
		return &SettingError{Setting: setting, Value: dir, Usage: true, Err: errors.New("not a directory: " + notDir)}
	}
	return nil
}

// VoiceIDs returns the ids of the voice files of dir that parse, sorted.
func VoiceIDs(dir string) []string {
	names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var ids []string
	for _, name := range names {
		if v, err := voices.ReadFile(name, nil); err == nil {
			ids = append(ids, v.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// checkVoiceStore checks the directory of clones: one that exists (a
// shared file system not mounted must not become a directory of this
// host's own) and that this process can write.
func checkVoiceStore(dir string) error {
	if dir == "" {
		return nil
	}
	if err := checkDir("VoiceStore", dir, "mount the file system the hosts share there, or create the directory (mkdir -m 700 "+dir+")",
		"give the directory, on a file system the hosts share, that holds the cloned voices"); err != nil {
		return err
	}
	probe, err := os.CreateTemp(dir, ".drama-write-check-*")
	if err != nil {
		return &SettingError{Setting: "VoiceStore", Value: dir, Err: fmt.Errorf("cannot write there (%w): drama serve saves and deletes clones in it", err)}
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}
