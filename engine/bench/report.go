package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// ReadReport reads a report.json.
func ReadReport(name string) (*Report, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("bench: %s: %w", name, err)
	}
	if err := r.Check(name); err != nil {
		return nil, err
	}
	return &r, nil
}

// MarshalIndent returns the report as indented JSON with a final newline.
func (r *Report) MarshalIndent() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
