// Package apikey is drama serve's API keys: the key file ("KEY [NAME]
// [SCOPE]" a line), the scope each key carries (speak < voices < admin),
// DRAMA_API_KEY's key, and the check of the key a request presents. Keys
// are kept as their sha256 only, and a presented key is compared with
// every key known in constant time over the digests: how long the check
// takes tells neither the length of a key nor which key came close.
//
// The key file's rules, the scopes' routes and reloading: docs/serve.md
// ("API keys").
package apikey

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// EnvKey is the environment variable that gives drama serve one key, named
// EnvName, of scope Admin.
const EnvKey = "DRAMA_API_KEY"

// EnvName is the name of the key EnvKey gives.
const EnvName = "env"

// MinLength and MaxLength bound a key's length in characters.
const (
	MinLength = 16
	MaxLength = 256
)

// Scope is what a key may do. Scopes are ordered: each allows what the one
// below it allows.
type Scope int

const (
	// Speak: speech, and the listing of models and voices.
	Speak Scope = iota + 1
	// Voices: also cloning, deleting clones, the page's clip check and
	// inline references in a speech request.
	Voices
	// Admin: everything, /metrics and the consent records of clones
	// included.
	Admin
)

// Scopes are the scopes, lowest first.
var Scopes = []Scope{Speak, Voices, Admin}

// String is the scope's name as a key file writes it.
func (s Scope) String() string {
	switch s {
	case Speak:
		return "speak"
	case Voices:
		return "voices"
	case Admin:
		return "admin"
	}
	return fmt.Sprintf("scope(%d)", int(s))
}

// Allows reports whether a key of scope s may do what needs scope need.
func (s Scope) Allows(need Scope) bool { return s >= need }

// ParseScope reads a scope's name.
func ParseScope(name string) (Scope, error) {
	for _, s := range Scopes {
		if s.String() == name {
			return s, nil
		}
	}
	return 0, fmt.Errorf("unknown scope %q: want speak, voices or admin", name)
}

// Key is one key as the server keeps it: its name, its scope and the
// sha256 of its text (the text itself is not kept).
type Key struct {
	Name  string
	Scope Scope
	sum   [sha256.Size]byte
	from  string // where it was given, for messages: "DRAMA_API_KEY", "keys.txt:3"
}

// Set is the keys a server takes. The zero Set, and a nil one, hold none.
// A Set is not changed once made: a reload makes a new one.
type Set struct {
	keys []Key
}

// Len is how many keys s holds.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.keys)
}

// Names are the keys' names, in the order given.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	out := make([]string, len(s.keys))
	for i, k := range s.keys {
		out[i] = k.Name
	}
	return out
}

// equal compares two digests in constant time (tests watch it).
var equal = subtle.ConstantTimeCompare

// Lookup returns the key whose text is presented. The presented text is
// hashed and its digest compared with every key's, all of them whatever
// matched, in constant time: the time taken depends on neither the
// presented text's length beyond the hashing, nor on which key matched.
func (s *Set) Lookup(presented string) (Key, bool) {
	if s.Len() == 0 {
		return Key{}, false
	}
	sum := sha256.Sum256([]byte(presented))
	found, at := 0, 0
	for i := range s.keys {
		eq := equal(s.keys[i].sum[:], sum[:])
		at = subtle.ConstantTimeSelect(eq, i, at)
		found |= eq
	}
	if found != 1 {
		return Key{}, false
	}
	return s.keys[at], true
}

// add adds k, refusing a key or a name already held.
func (s *Set) add(k Key) error {
	for _, o := range s.keys {
		if subtle.ConstantTimeCompare(o.sum[:], k.sum[:]) == 1 {
			return fmt.Errorf("the same key as %s: give each key once", o.from)
		}
		if o.Name == k.Name {
			return fmt.Errorf("the name %q is also the name of the key of %s: give each key a name of its own", k.Name, o.from)
		}
	}
	s.keys = append(s.keys, k)
	return nil
}

// checkKey checks a key's text. Its messages never quote the key.
func checkKey(text string) error {
	switch n := len(text); {
	case n < MinLength:
		return fmt.Errorf("the key is %d characters; a key needs at least %d: make one with openssl rand -hex 32", n, MinLength)
	case n > MaxLength:
		return fmt.Errorf("the key is %d characters; a key has at most %d", n, MaxLength)
	}
	for i := 0; i < len(text); i++ {
		if c := text[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("character %d of the key is not printable ASCII (no spaces or control characters): make one with openssl rand -hex 32", i+1)
		}
	}
	return nil
}

// checkName checks a key's name.
func checkName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("the name %q: want 1 to 64 letters, digits, '.', '_' or '-'", name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("the name %q: want 1 to 64 letters, digits, '.', '_' or '-'", name)
		}
	}
	return nil
}

// LineError is a key file's line that is refused.
type LineError struct {
	File string
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }

// Unwrap returns why the line is refused.
func (e *LineError) Unwrap() error { return e.Err }

// ErrNoKeys is returned for a key file that holds no key.
var ErrNoKeys = errors.New("no keys")

// Parse reads a key file's text from r; name names the file in messages.
func Parse(name string, r io.Reader) (*Set, error) {
	s := &Set{}
	if err := s.parse(name, r); err != nil {
		return nil, err
	}
	if s.Len() == 0 {
		return nil, fmt.Errorf("%s: %w: write one key a line, KEY NAME SCOPE (scope speak, voices or admin), e.g. a key from openssl rand -hex 32", name, ErrNoKeys)
	}
	return s, nil
}

func (s *Set) parse(name string, r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	n := 0
	for sc.Scan() {
		n++
		lineErr := func(format string, args ...any) error {
			return &LineError{File: name, Line: n, Err: fmt.Errorf(format, args...)}
		}
		fields := strings.Fields(sc.Text())
		for i, f := range fields {
			if strings.HasPrefix(f, "#") {
				fields = fields[:i]
				break
			}
		}
		if len(fields) == 0 {
			continue
		}
		if len(fields) > 3 {
			return lineErr("%d fields: want KEY [NAME] [SCOPE], e.g. <key> ops admin", len(fields))
		}
		if err := checkKey(fields[0]); err != nil {
			return lineErr("%v", err)
		}
		k := Key{Name: fmt.Sprintf("line-%d", n), Scope: Speak, sum: sha256.Sum256([]byte(fields[0])), from: fmt.Sprintf("%s:%d", name, n)}
		if len(fields) > 1 {
			if _, err := ParseScope(fields[1]); err == nil && len(fields) == 2 {
				return lineErr("%q stands where the name goes: write KEY NAME %s (the name first, then the scope)", fields[1], fields[1])
			}
			if err := checkName(fields[1]); err != nil {
				return lineErr("%v", err)
			}
			k.Name = fields[1]
		}
		if len(fields) > 2 {
			scope, err := ParseScope(fields[2])
			if err != nil {
				return lineErr("%v", err)
			}
			k.Scope = scope
		}
		if err := s.add(k); err != nil {
			return lineErr("%v", err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: line %d: %w", name, n+1, err)
	}
	return nil
}

// ReadFile reads a key file. A file that every user may read or write is
// refused: its keys are no secret.
func ReadFile(path string) (*Set, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a file: give a file of keys, one a line", path)
	}
	if perm := st.Mode().Perm(); perm&0o006 != 0 {
		return nil, fmt.Errorf("%s can be read or written by every user (mode %04o): its keys are no secret; run chmod 600 %s (640 to share it with a group)", path, perm, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, bytes.NewReader(data))
}

// Load returns drama serve's keys: env (the value of EnvKey; "" for none)
// as the key EnvName of scope Admin, and the keys of the key file at file
// ("" for none). It returns nil, and no error, when neither gives a key.
func Load(env, file string) (*Set, error) {
	s := &Set{}
	if env != "" {
		if err := checkKey(env); err != nil {
			return nil, fmt.Errorf("%s: %v", EnvKey, err)
		}
		s.keys = append(s.keys, Key{Name: EnvName, Scope: Admin, sum: sha256.Sum256([]byte(env)), from: EnvKey})
	}
	if file != "" {
		fs, err := ReadFile(file)
		if err != nil {
			return nil, err
		}
		for _, k := range fs.keys {
			if err := s.add(k); err != nil {
				return nil, fmt.Errorf("%s: %v", k.from, err)
			}
		}
	}
	if s.Len() == 0 {
		return nil, nil
	}
	return s, nil
}
