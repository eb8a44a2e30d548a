// Package prompt builds Drama 3 prompts and counts their tokens, so that
// drama refuses a request the model cannot take before it reaches the
// engine. It owns the tokenizer (a Hugging Face tokenizer.json of the
// byte-level BPE kind, encoded as Hugging Face's tokenizers do, on
// sugarme/tokenizer's BPE model with the parts it gets wrong supplied
// here), the prompt's layout as fish-speech's S2 inference builds it
// (Builder), the checks of a text and its references, and the limits read
// from the checkpoint's config.json (ReadLimits).
//
// What the tokenizer does and accepts, the prompt's layout, what is
// refused and how it is built: docs/tokenizer.md.
package prompt
