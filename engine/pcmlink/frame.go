package pcmlink

import (
	"encoding/binary"
	"errors"
)

// EnvFD names the environment variable in which the host tells a plugin
// which of its file descriptors is the link.
const EnvFD = "DRAMA_ENGINE_PCM_FD"

// MaxFrame is the most PCM one frame carries. A frame announcing more
// breaks the link: the receiver never allocates what a peer asks for.
const MaxFrame = 128 << 10

// A frame is a header of the synthesis id (8 bytes) and a length word
// (4 bytes), little-endian, then what the word announces: below endFlag,
// that many bytes of PCM; endFlag plus k, the end of the synthesis's audio
// and a trailer of k bytes (the plugin's final event); lengthAbort, the
// end of an unfinished synthesis's audio.
const (
	headerSize  = 12
	endFlag     = 1 << 31
	lengthAbort = 1<<32 - 1
)

// MaxTrailer is the most an end mark's trailer may hold.
const MaxTrailer = 64 << 10

// ErrAborted is what a Reader returns when the plugin ended the audio
// unfinished; the plugin's gRPC stream says why.
var ErrAborted = errors.New("pcm link: the plugin ended the audio unfinished")

// ErrClosed is what a Reader returns once the link is closed.
var ErrClosed = errors.New("pcm link: closed")

func putHeader(h *[headerSize]byte, id uint64, n uint32) {
	binary.LittleEndian.PutUint64(h[:8], id)
	binary.LittleEndian.PutUint32(h[8:], n)
}

func parseHeader(h []byte) (id uint64, n uint32) {
	return binary.LittleEndian.Uint64(h[:8]), binary.LittleEndian.Uint32(h[8:])
}
