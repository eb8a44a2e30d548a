// Package quant converts the routed experts of MoE safetensors checkpoints:
// block FP8 or BF16 to NVFP4, BF16 to 128x128 block FP8, and back to BF16,
// with expert pruning, streaming shard by shard. It owns the kernels
// (QuantizeNVFP4, QuantizeBlockFP8, QuantizeFP8Block), the recipe of tensor
// roles, the keep list and its computation from router statistics
// (Coverage), the conversion (Quantize) and its check (Check).
//
// The formulas, the tensors written, pruning and the limits:
// docs/quantize.md.
package quant
