package native

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/textproto"
	"strconv"
	"strings"
)

// maxChunkLine bounds a chunk-size line and maxChunkSize one chunk, so a
// broken or hostile server cannot make the reader allocate without bound.
const (
	maxChunkLine = 4096
	maxChunkSize = 1 << 30
)

// chunkedReader reads an HTTP/1.1 chunked body from the raw connection,
// keeping the trailer. A body that ends before its terminating zero-size
// chunk is ErrTruncated: the server failed after it began to send.
type chunkedReader struct {
	r       *bufio.Reader
	left    int64 // bytes left in the current chunk
	started bool  // a chunk was read, so a CRLF precedes the next size line
	done    bool
	trailer textproto.MIMEHeader
	offset  int64 // body bytes consumed, for error messages
}

func newChunkedReader(r *bufio.Reader) *chunkedReader {
	return &chunkedReader{r: r}
}

// Read implements io.Reader over the chunk data.
func (c *chunkedReader) Read(p []byte) (int, error) {
	if c.done {
		return 0, io.EOF
	}
	if c.left == 0 {
		if err := c.next(); err != nil {
			return 0, err
		}
		if c.done {
			return 0, io.EOF
		}
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	c.offset += int64(n)
	if err != nil {
		return n, c.truncated(err)
	}
	return n, nil
}

// next reads the CRLF that ends the previous chunk and the next size line;
// on the zero-size chunk it reads the trailer section.
func (c *chunkedReader) next() error {
	if c.started {
		if err := c.crlf(); err != nil {
			return err
		}
	}
	c.started = true
	line, err := c.line()
	if err != nil {
		return err
	}
	if i := strings.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	size, err := strconv.ParseInt(strings.TrimSpace(line), 16, 64)
	if err != nil || size < 0 || size > maxChunkSize {
		return fmt.Errorf("%w: chunk size %q at body offset %d", ErrProtocol, line, c.offset)
	}
	if size > 0 {
		c.left = size
		return nil
	}
	h, err := textproto.NewReader(c.r).ReadMIMEHeader()
	if err != nil {
		return fmt.Errorf("%w: trailer after the last chunk: %v", ErrTruncated, err)
	}
	c.trailer, c.done = h, true
	return nil
}

func (c *chunkedReader) crlf() error {
	var b [2]byte
	if _, err := io.ReadFull(c.r, b[:]); err != nil {
		return c.truncated(err)
	}
	if b != [2]byte{'\r', '\n'} {
		return fmt.Errorf("%w: want CRLF after a chunk at body offset %d, got %q", ErrProtocol, c.offset, b[:])
	}
	return nil
}

func (c *chunkedReader) line() (string, error) {
	line, err := c.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) || len(line) > maxChunkLine {
		return "", fmt.Errorf("%w: chunk-size line over %d bytes at body offset %d", ErrProtocol, maxChunkLine, c.offset)
	}
	if err != nil {
		return "", c.truncated(err)
	}
	return strings.TrimRight(string(line), "\r\n"), nil
}

func (c *chunkedReader) truncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w at body offset %d", ErrTruncated, c.offset)
	}
	return fmt.Errorf("%w at body offset %d: %v", ErrTruncated, c.offset, err)
}
