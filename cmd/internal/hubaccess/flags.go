package hubaccess

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drama-tts/drama/cmd/internal/cmdutil"
)

// HubFlags are the flags and facts of the command line that the commands
// reading the Hub share: where the Hub is, which pins, and what advice
// repeats.
type HubFlags struct {
	Endpoint string // --endpoint
	PinsFile string // --pins
	// VariantSet says --variant was given: a --pins file for another
	// variant is then refused.
	VariantSet bool
	// Given are the flags of the command line as flag, value pairs
	// (cmdutil.GivenFlags), and words the command's own words ("pins",
	// "lock"), for advice that repeats the user's command.
	Given []string
	words []string
}

// Bind adds --endpoint and --pins to cmd; pinsHelp says what --pins is
// for this command.
func (h *HubFlags) Bind(cmd *cobra.Command, pinsHelp string) {
	fl := cmd.Flags()
	fl.StringVar(&h.Endpoint, "endpoint", "", "Hub address (default $HF_ENDPOINT, else https://huggingface.co)")
	fl.StringVar(&h.PinsFile, "pins", "", pinsHelp)
}

// Parse checks --endpoint (or HF_ENDPOINT) and records what was given on
// cmd's command line; it runs in RunE, once the flags are parsed.
func (h *HubFlags) Parse(f *cmdutil.Factory, cmd *cobra.Command) error {
	if err := CheckEndpoint(f, h.Endpoint); err != nil {
		return err
	}
	h.VariantSet = cmd.Flags().Changed("variant")
	h.Given = cmdutil.GivenFlags(cmd)
	h.words = strings.Fields(cmd.CommandPath())[1:]
	return nil
}

// CommandLine is the user's own command, for advice: drama, the command's
// words and every flag given, as cmdutil.Factory.Suggest writes them.
func (h *HubFlags) CommandLine(f *cmdutil.Factory) string {
	return f.Suggest(append(slices.Clone(h.words), h.Given...)...)
}
