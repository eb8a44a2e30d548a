package cmdutil

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/drama-tts/drama/internal/safetext"
)

// WriteJSON writes v as one indented JSON document followed by a newline.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Table prints rows: aligned columns under upper-case headers on a terminal,
// tab-separated rows without headers when standard output is piped.
type Table struct {
	ios     *IOStreams
	headers []string
	rows    [][]string
}

// NewTable starts a table with the given column headers.
func NewTable(ios *IOStreams, headers ...string) *Table {
	return &Table{ios: ios, headers: headers}
}

// AddRow adds one row. Each cell is escaped with safetext.Escape: a
// cell may hold outside text (a file name from the Hub, a voice's
// transcript), and a tab, line break or terminal escape in it is shown as
// \t, \n or \x1b, never acted on, so a row stays one row of its columns.
func (t *Table) AddRow(cells ...string) {
	row := make([]string, len(cells))
	for i, c := range cells {
		row[i] = safetext.Escape(c)
	}
	t.rows = append(t.rows, row)
}

// Render writes the table to standard output.
func (t *Table) Render() error {
	if !t.ios.IsStdoutTTY() {
		for _, r := range t.rows {
			if _, err := fmt.Fprintln(t.ios.Out, strings.Join(r, "\t")); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(t.ios.Out, 0, 4, 2, ' ', 0)
	if len(t.headers) > 0 {
		fmt.Fprintln(tw, strings.ToUpper(strings.Join(t.headers, "\t")))
	}
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// HumanBytes formats n bytes with a binary unit (e.g. "38.6 GiB").
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
