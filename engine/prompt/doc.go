// Package prompt builds Drama 3 prompts and counts their tokens, so that
// drama refuses a request the model cannot take before it reaches the
// engine.
//
// # Tokenizer
//
// Open and Read load a Hugging Face tokenizer.json of the byte-level BPE kind
// Qwen2, Qwen3, Fish Audio S2 and Drama 3 use, and Encode gives the ids
// Hugging Face's tokenizers give for encode(text, add_special_tokens=False):
//
//  1. Added tokens (added_tokens) are found first, in the raw text, leftmost
//     and then longest first, honouring lstrip, rstrip and single_word; each
//     becomes its own id, so "<|im_start|>" inside a text is one token.
//  2. The rest is normalized (NFC when the file says so), added tokens
//     marked normalized are found in it, and the remainder is cut into
//     pieces by the pre-tokenizer's split pattern (a Split with behavior
//     Isolated followed by ByteLevel without its own regex, or ByteLevel
//     with the GPT-2 pattern).
//  3. Each piece's bytes become byte-level tokens and the merges apply, the
//     lowest rank first and, among equal ranks, the leftmost.
//
// The model (vocabulary and merge table) is github.com/sugarme/tokenizer's
// BPE model, and EncodeTokens, which also gives each token's offsets, runs
// sugarme's pipeline. Version 0.3.0 of that module cannot read a Qwen-style
// file as it is, so this package supplies the parts it gets wrong: the split
// pattern runs on github.com/dlclark/regexp2 with .NET semantics (Go's
// regexp has no lookahead; regexp2's RE2 option would make \s ASCII-only),
// the merge loop breaks ties by position, added tokens keep the ids the file
// gives them, and NFC composes. For the Qwen pattern a hand-written scanner,
// held equal to regexp2 by a fuzz target, replaces the regular expression;
// Encode goes straight from pieces to ids without sugarme's per-byte offset
// tracking, over ten times faster (docs/BENCHMARKS.md).
//
// Not supported, with ErrUnsupported naming the field: models other than
// BPE, BPE dropout, byte fallback, subword prefixes and suffixes,
// normalizers other than NFC, and pre-tokenizers of other shapes. Text must
// be valid UTF-8 (ErrInvalidUTF8 with the byte offset).
//
// # Prompt
//
// A Builder lays out the prompt as fish-speech's S2 inference does; see
// Builder for the layout. Each reference transcript gets a <|speaker:i|> tag
// (i counting references from 0), transcripts are joined with line feeds,
// and every reference frame becomes the semantic token of its codebook-0
// code: <|semantic:0|> to <|semantic:4095|>, looked up by name and required
// to have contiguous ids (ErrSemantic otherwise). The other nine codebooks
// travel beside the main row (Prompt.Rows).
//
// Transcripts follow the voices package's rule, with the tokenizer's added
// tokens as the forbidden strings (Tokenizer.SpecialTokens); the text to
// speak must not hold an added token or "<|" / "|>" either
// (ErrStructuralToken). A prompt longer than Limits allow is refused with a
// *TooLongError; Limits come from the checkpoint's config.json (ReadLimits:
// max_seq_len, else max_position_embeddings, also under text_config) less a
// reserve for the reply (DefaultReserve, 2048 tokens, fish-speech's margin),
// or from an explicit maximum.
package prompt
