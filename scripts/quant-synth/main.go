// Command quant-synth writes a synthetic Qwen3-MoE-shaped block-FP8
// checkpoint (safetensors/quant.SyntheticCheckpoint) for benchmarks and
// trials of drama quantize without the real model.
//
//	go run ./scripts/quant-synth -o /tmp/synth -layers 8 -experts 64
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/drama-tts/drama/safetensors/quant"
)

func main() {
	out := flag.String("o", "", "output directory (created)")
	var s quant.SyntheticCheckpoint
	flag.IntVar(&s.Layers, "layers", 8, "MoE layers")
	flag.IntVar(&s.Experts, "experts", 64, "routed experts per layer")
	flag.IntVar(&s.Hidden, "hidden", 2048, "hidden size (expert input columns)")
	flag.IntVar(&s.Inter, "inter", 512, "expert intermediate size")
	flag.IntVar(&s.Shards, "shards", 4, "shards")
	flag.BoolVar(&s.BF16Experts, "bf16", false, "BF16 experts instead of block FP8")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "quant-synth: -o DIR is required")
		os.Exit(2)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "quant-synth:", err)
		os.Exit(1)
	}
	if err := s.Write(*out); err != nil {
		fmt.Fprintln(os.Stderr, "quant-synth:", err)
		os.Exit(1)
	}
}
