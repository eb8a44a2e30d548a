package shared

import (
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
	// CommandLine is the command as the user gave it, for advice.
	CommandLine string
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
	h.CommandLine = CommandLine(cmd)
	return nil
}
