// Package dtype converts numbers between float32 and the narrow floating-point
// formats drama computes with in safetensors checkpoints: BF16, F16,
// F8_E4M3 (E4M3FN) and the 4-bit E2M1 element of NVFP4. (F8_E5M2 tensors
// are carried as bytes; nothing in drama computes with them.)
//
// Every encoder rounds to nearest with ties to even and follows PyTorch's CPU
// casts bit for bit, so a tensor converted here has the same bytes as one
// converted with torch's .bfloat16(), .half() or .to(torch.float8_e4m3fn):
//
//   - BF16: the upper half of the float32 after rounding; every NaN becomes
//     0xFFFF, as torch's vectorized CPU cast gives.
//   - F16: IEEE binary16; a NaN keeps its sign and
//     the top of its payload and becomes quiet (sign|0x7E00|payload>>13);
//     infinities and magnitudes from 65520 on become infinities.
//   - F8_E4M3 (E4M3FN): bias 7, no infinity, 0x7F and 0xFF are NaN, largest
//     finite 448 (0x7E). The cast is not saturating: magnitudes above 464, and
//     infinities and NaN, become sign|0x7F (NaN). Subnormals are kept.
//   - E2M1: 1 sign, 2 exponent, 1 mantissa bit; values 0, 0.5, 1, 1.5, 2, 3,
//     4, 6 and their negatives, no infinity or NaN. Magnitudes above 5
//     saturate to 6. The sign bit is set for every x < 0, so a small negative
//     number that rounds to zero gives code 0x8 (negative zero) and -0.0 gives
//     0x0, as NVIDIA ModelOpt does. NaN gives 0x7, where a sorted search of
//     the rounding bounds places it.
//
// Decoders are exact. The slice helpers read and write little-endian bytes,
// the byte order of safetensors files.
package dtype
