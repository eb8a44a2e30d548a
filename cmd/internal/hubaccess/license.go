package hubaccess

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
	"github.com/drama-tts/drama/internal/atomicfile"
	"github.com/drama-tts/drama/internal/safetext"
	"github.com/drama-tts/drama/pins"
)

// licenseFile is the acceptance record in <root>/.drama.
const licenseFile = "license-acceptance.json"

// Acceptance records who accepted which licence for which repository, when
// and how.
type Acceptance struct {
	License    string    `json:"license"`
	LicenseURL string    `json:"license_url,omitempty"`
	Repo       string    `json:"repo"`
	Revision   string    `json:"revision"`
	User       string    `json:"user"`
	Time       time.Time `json:"time"`
	How        string    `json:"how"` // "flag" or "prompt"
}

// ReadAcceptances reads the acceptance record of root; none is no error.
func ReadAcceptances(root string) ([]Acceptance, error) {
	data, err := os.ReadFile(filepath.Join(root, pins.StateDirName, licenseFile))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Acceptance
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("%s: %w: delete it to be asked again", filepath.Join(root, pins.StateDirName, licenseFile), err)
	}
	return out, nil
}

// Accepted returns the record of an earlier acceptance of p's licence for
// p's repository in root, nil when there is none.
func Accepted(root string, p *pins.Pins) (*Acceptance, error) {
	prev, err := ReadAcceptances(root)
	if err != nil {
		return nil, err
	}
	for i, a := range prev {
		if a.License == p.License && a.Repo == p.Repo {
			return &prev[i], nil
		}
	}
	return nil, nil
}

// AcceptLicense shows the licence and goes on only if it was accepted
// before for this repository, or now by flag or typed "yes" (drama fetch,
// drama up).
func AcceptLicense(f *cmdutil.Factory, root string, p *pins.Pins, byFlag bool) error {
	if a, err := Accepted(root, p); err != nil || a != nil {
		return err
	}
	prev, _ := ReadAcceptances(root)
	// the licence's name and address come from the pins file: outside text
	fmt.Fprintln(f.IO.ErrOut, safetext.Lines(fmt.Sprintf("The %s weights (%s) are licensed under the %s.\nRead it before downloading: %s", p.Variant, p.Repo, p.License, orURL(p))))
	how := "flag"
	switch {
	case byFlag:
	case f.IO.CanPrompt() && !f.Global.JSON:
		fmt.Fprint(f.IO.ErrOut, "Type yes to accept it and download: ")
		line, _ := bufio.NewReader(f.IO.In).ReadString('\n')
		if strings.TrimSpace(strings.ToLower(line)) != "yes" {
			return fmt.Errorf("licence not accepted: nothing was downloaded")
		}
		how = "prompt"
	default:
		return fmt.Errorf("licence not accepted: read it at %s, then run again with --accept-license (or at a terminal, type yes)", orURL(p))
	}
	return recordAcceptance(root, append(prev, Acceptance{License: p.License, LicenseURL: p.LicenseURL, Repo: p.Repo,
		Revision: p.Revision, User: whoami(), Time: time.Now().UTC(), How: how}))
}

func orURL(p *pins.Pins) string {
	if p.LicenseURL != "" {
		return p.LicenseURL
	}
	return "https://huggingface.co/" + p.Repo
}

func whoami() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return fmt.Sprintf("uid %d", os.Getuid())
}

func recordAcceptance(root string, all []Acceptance) error {
	dir := filepath.Join(root, pins.StateDirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, licenseFile), append(data, '\n'), 0o644)
}
