// Package dtype converts numbers between float32 and the narrow floating-point
// formats drama computes with in safetensors checkpoints: BF16, F16,
// F8_E4M3 (E4M3FN) and the 4-bit E2M1 element of NVFP4. Every encoder
// rounds to nearest with ties to even and follows PyTorch's CPU casts bit
// for bit; decoders are exact; the slice helpers read and write
// little-endian bytes.
//
// Each format's rules (NaN, saturation, subnormals) and how the casts are
// checked against torch: docs/quantize.md ("Number codecs").
package dtype
