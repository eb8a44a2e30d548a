// Package quant converts the routed experts of MoE safetensors checkpoints:
// block FP8 or BF16 to NVFP4, BF16 to 128x128 block FP8, and back to BF16,
// with expert pruning, streaming shard by shard.
//
// # NVFP4
//
// A [N, K] matrix (K a multiple of 16) becomes E2M1 codes packed two to a
// byte with the even element in the low nibble (U8 [N, K/2]), one F8_E4M3
// scale per 16 consecutive elements of a row (F8_E4M3 [N, K/16], row-major,
// not swizzled) and one float32 global scale g = amax/2688 (1 for an
// all-zero tensor). Block scale s = e4m3(min(amax_16/(6g), 448)), 1 for an
// all-zero block; code = e2m1(x / (f32(s)*g)), round to nearest with ties
// to even, the sign bit set for x/(s*g) < 0. ModelOpt stores g as
// weight_scale_2 (F32 []), compressed-tensors 1/g as weight_global_scale (F32
// [1]). An expert's gate and up projections share one g (from the larger
// amax). These bytes equal PyTorch's (testdata, made by
// scripts/make-quant-reference.py).
//
// # Block FP8 sources
//
// weight F8_E4M3 [N, K] with weight_scale_inv F32 [ceil(N/128), ceil(K/128)],
// dequantized as bf16(f32(fp8) x scale) (or float32 without the BF16 step).
// QuantizeBlockFP8 goes from FP8 bytes straight to NVFP4 through per-block
// code tables and gives the same bytes as dequantizing first.
//
// # Checkpoints
//
// Quantize plans every output shard from the input headers alone (a Recipe
// says which tensors are routed experts), then converts with a few workers,
// each holding one expert's projections, and copies every other tensor byte
// for byte. Pruned experts (a KeepList, given or computed by Coverage from
// RouterStats) are never read; the kept list is written to the output index
// as metadata.drama_experts. Check compares an output with its source.
//
// # Limits
//
// Expert projections are 2-D per expert, or fused 3-D tensors of all a
// layer's experts, which are read as per-expert slices and written under
// per-expert names.
// NaN or infinity in a source, FP8 bytes 0x7F/0xFF, and non-positive block
// scales are errors. Weight-only: no activation scales are written.
package quant
