package quant

import (
	"encoding/json"
	"fmt"
	"github.com/drama-tts/drama/internal/atomicfile"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/drama-tts/drama/safetensors"
)

// finishDir writes the index and the configs into the output directory dir
// and copies every other regular file of inDir.
func finishDir(inDir, dir string, p *planned, opts *Options) error {
	if err := writeIndex(inDir, dir, p); err != nil {
		return err
	}
	if err := writeConfigs(inDir, dir, opts); err != nil {
		return err
	}
	return copyOthers(inDir, dir)
}

// writeIndex writes model.safetensors.index.json: the input's metadata kept,
// total_size recomputed, drama_experts set when pruning, the new weight_map.
func writeIndex(inDir, dir string, p *planned) error {
	ix := &safetensors.Index{Metadata: map[string]json.RawMessage{}, WeightMap: map[string]string{}}
	if old, err := safetensors.ReadIndex(filepath.Join(inDir, safetensors.IndexName)); err == nil {
		for k, v := range old.Metadata {
			ix.Metadata[k] = v
		}
	}
	for _, s := range p.shards {
		for _, t := range s.layout.Tensors {
			ix.WeightMap[t.Name] = s.name
		}
	}
	ix.Metadata["total_size"] = json.RawMessage(fmt.Sprint(p.result.BytesOut))
	delete(ix.Metadata, "drama_experts")
	if p.result.Keep != nil {
		b, _ := json.Marshal(p.result.Keep)
		ix.Metadata["drama_experts"] = b
	}
	b, err := ix.Marshal()
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, safetensors.IndexName), b, 0o644); err != nil {
		return fmt.Errorf("quant: %w", err)
	}
	return nil
}

// writeConfigs rewrites config.json's quantization_config for the target
// and, for the ModelOpt layout, writes hf_quant_config.json.
func writeConfigs(inDir, dir string, opts *Options) error {
	cfg := map[string]json.RawMessage{}
	b, err := os.ReadFile(filepath.Join(inDir, "config.json"))
	if err == nil {
		if err := json.Unmarshal(b, &cfg); err != nil {
			return fmt.Errorf("quant: %s: %w", filepath.Join(inDir, "config.json"), err)
		}
	} else if !os.IsNotExist(err) {
		return fmt.Errorf("quant: %w", err)
	}
	qc := quantConfig(opts)
	if qc == nil {
		delete(cfg, "quantization_config")
	} else {
		cfg["quantization_config"], _ = json.Marshal(qc)
	}
	if err := writeJSON(filepath.Join(dir, "config.json"), cfg); err != nil {
		return err
	}
	if opts.Target == ToNVFP4 && opts.Layout == LayoutModelOpt {
		return writeJSON(filepath.Join(dir, "hf_quant_config.json"), hfQuantConfig(opts.Recipe))
	}
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("quant: %s: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("quant: %w", err)
	}
	return nil
}

// copyOthers copies inDir's regular files that the conversion does not
// write (tokenizer, chat template, licence, ...) byte for byte.
func copyOthers(inDir, dir string) error {
	entries, err := os.ReadDir(inDir)
	if err != nil {
		return fmt.Errorf("quant: %w", err)
	}
	for _, e := range entries {
		n := e.Name()
		if !e.Type().IsRegular() || strings.HasSuffix(n, ".safetensors") || strings.HasPrefix(n, ".") ||
			n == safetensors.IndexName || n == "config.json" || n == "hf_quant_config.json" {
			continue
		}
		if err := copyFile(filepath.Join(inDir, n), filepath.Join(dir, n)); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("quant: %w", err)
	}
	defer in.Close()
	return atomicfile.Write(dst, 0o644, func(f *os.File) error {
		if _, err := io.Copy(f, in); err != nil {
			return fmt.Errorf("quant: copy %s: %w", src, err)
		}
		return nil
	})
}
