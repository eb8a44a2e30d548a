// Package convert writes the tensors of a torch.save checkpoint (read with
// package pth) as a safetensors file: a conversion planned first (New, a
// Plan: the tensors selected, weight-norm pairs folded, each given its
// output dtype), then written (Plan.Write) through a temporary beside the
// target, unchanged tensors copied by the kernel or reflinked and the
// others cast by several workers, in memory that does not grow with the
// checkpoint, with the source's name and sha256 in the output's metadata.
//
// The options, the metadata and how a conversion is written: docs/pth.md.
package convert
