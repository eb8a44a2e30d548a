// Command drama-tokenizer writes a tokenizer.json laid out as Drama 3's
// (the Qwen3 tokenizer with Fish Audio's added tokens) into a directory,
// for trying drama tokenize and drama serve without the real checkpoint.
//
//	go run ./scripts/drama-tokenizer DIR
package main

import (
	"fmt"
	"os"

	"github.com/drama-tts/drama/engine/prompt/prompttest"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: drama-tokenizer DIR")
		os.Exit(2)
	}
	path, err := prompttest.WriteDrama(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "drama-tokenizer:", err)
		os.Exit(1)
	}
	fmt.Println(path)
}
