package filehash

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/drama-tts/drama/internal/safetext"
)

// MaxSumsSize is the largest sums file ReadSums reads: a file of many
// thousand lines, far more than drama's (a plugin's one line, an engine's
// few binaries, a patch series).
const MaxSumsSize = 1 << 20

// ErrSumsFormat is wrapped by every *LineError (a line that is not in
// sha256sum's format) and by the error of a file too large to be one.
var ErrSumsFormat = errors.New("not in sha256sum's format")

// Sum is one line of a sums file: a file's sha256 and its name.
type Sum struct {
	SHA256 string // 64 lower-case hex digits
	Name   string // as the line gives it, without the binary mode's '*'
	Line   int    // the line it is on, from 1
}

// LineError is a line of a sums file that is not in sha256sum's format. It
// wraps ErrSumsFormat.
type LineError struct {
	File string // the sums file, as the caller named it
	Line int    // from 1
	Err  error  // what is wrong with the line
}

// Error names the file and the line, says what is wrong and what a line
// must be.
func (e *LineError) Error() string {
	return fmt.Sprintf("%s line %d: %v; want \"<64 hex digits>  <file name>\", one file a line, as sha256sum writes it", e.File, e.Line, e.Err)
}

// Unwrap returns the line's fault and ErrSumsFormat.
func (e *LineError) Unwrap() []error { return []error{e.Err, ErrSumsFormat} }

// ReadSums reads the sums file at name (see ParseSums). An error reading
// the file is an *fs.PathError (a missing file wraps os.ErrNotExist); a
// file over MaxSumsSize is refused unread.
func ReadSums(name string) ([]Sum, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSumsSize+1))
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: name, Err: err}
	}
	if len(data) > MaxSumsSize {
		return nil, fmt.Errorf("%s: over %d bytes, too large for a sums file: %w", name, MaxSumsSize, ErrSumsFormat)
	}
	return ParseSums(name, data)
}

// ParseSums reads data in sha256sum's format: a line for each file,
// "<64 hex digits>  <name>" (two spaces, or a space and '*' in binary
// mode, as sha256sum writes them; a single space or a tab is taken too).
// Blank lines are skipped and a line may end in "\r". The digests come
// back lower-case, the names as the lines give them: whether a name must
// be relative, or plain, is the caller's to check. A line that is not in
// the format, a name holding a control character, the backslash-escaped
// name sha256sum writes for a name with a newline or a backslash, and a
// name given twice are a *LineError naming file (the caller's name for
// data) and the line.
func ParseSums(file string, data []byte) ([]Sum, error) {
	var sums []Sum
	first := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, MaxSumsSize+1)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		s, err := parseSum(line)
		if err == nil && first[s.Name] > 0 {
			err = fmt.Errorf("\"%s\" is named again (first on line %d)", quote(s.Name), first[s.Name])
		}
		if err != nil {
			return nil, &LineError{File: file, Line: n, Err: err}
		}
		s.Line = n
		first[s.Name] = n
		sums = append(sums, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", file, err, ErrSumsFormat)
	}
	return sums, nil
}

// parseSum splits one line into its digest and name.
func parseSum(line string) (Sum, error) {
	if strings.HasPrefix(line, `\`) {
		return Sum{}, errors.New("an escaped file name (sha256sum escapes a name holding a newline or a backslash): rename the file")
	}
	digest, name := line, ""
	if i := strings.IndexAny(line, " \t"); i >= 0 {
		digest, name = line[:i], line[i+1:]
		if strings.HasPrefix(name, " ") || strings.HasPrefix(name, "*") {
			name = name[1:]
		}
	}
	if len(digest) != 64 || strings.Trim(digest, "0123456789abcdefABCDEF") != "" {
		return Sum{}, fmt.Errorf("the digest \"%s\" is not 64 hex digits", quote(digest))
	}
	if name == "" {
		return Sum{}, errors.New("no file name after the digest")
	}
	if strings.ContainsFunc(name, safetext.IsControl) {
		return Sum{}, fmt.Errorf("the file name \"%s\" holds a control character", quote(name))
	}
	return Sum{SHA256: strings.ToLower(digest), Name: name}, nil
}

// quote returns s escaped for printing, cut at 80 characters.
func quote(s string) string {
	if r := []rune(s); len(r) > 80 {
		s = string(r[:80]) + "..."
	}
	return safetext.Escape(s)
}
