// Command drama is the toolchain for Fish Audio's Drama 3 model assets and
// serving. See README.md for usage.
package main

import (
	"os"

	"github.com/drama-tts/drama/cmd/internal/cli"
)

func main() {
	os.Exit(cli.Main())
}
