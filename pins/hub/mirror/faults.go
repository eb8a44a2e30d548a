package mirror

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// FaultKind names one way a data response goes wrong.
type FaultKind string

// The fault kinds.
const (
	FaultDrop      FaultKind = "drop"     // send half the body, then drop the connection
	FaultFull200   FaultKind = "full200"  // ignore Range: 200 with the whole file
	FaultBadRange  FaultKind = "badrange" // 206 whose Content-Range starts one byte late
	FaultRange416  FaultKind = "416"      // 416 Range Not Satisfiable
	FaultRateLimit FaultKind = "429"      // 429 with RateLimit and Retry-After headers
	Fault5xx       FaultKind = "503"      // 503 Service Unavailable
	FaultStall     FaultKind = "stall"    // send half the body, then hang until the client leaves
	FaultFlip      FaultKind = "flip"     // flip one bit of the first byte sent
	FaultExpire    FaultKind = "expire"   // 403 as for an expired signed URL
	FaultShort     FaultKind = "short"    // 206 with the right headers but a body one byte short, then close
	FaultSlow      FaultKind = "slow"     // the whole body, at Server.SlowBytesPerSec
)

var faultKinds = []FaultKind{FaultDrop, FaultFull200, FaultBadRange, FaultRange416, FaultRateLimit, Fault5xx, FaultStall, FaultFlip, FaultExpire, FaultShort, FaultSlow}

// Fault fires on data responses number After+1 to After+Times, counted
// over every data GET the server answers.
type Fault struct {
	Kind  FaultKind
	After int
	Times int
}

// ParseFault parses "KIND[@AFTER][xTIMES]", e.g. "drop", "503x3",
// "flip@4", "stall@2x2". Times defaults to 1, After to 0.
func ParseFault(s string) (Fault, error) {
	f := Fault{Times: 1}
	rest := s
	if i := strings.LastIndexByte(rest, 'x'); i > 0 && !isKind(rest) {
		n, err := strconv.Atoi(rest[i+1:])
		if err != nil || n < 1 {
			return f, fmt.Errorf("mirror: fault %q: times %q: want a positive integer", s, rest[i+1:])
		}
		f.Times, rest = n, rest[:i]
	}
	if i := strings.IndexByte(rest, '@'); i >= 0 {
		n, err := strconv.Atoi(rest[i+1:])
		if err != nil || n < 0 {
			return f, fmt.Errorf("mirror: fault %q: after %q: want a non-negative integer", s, rest[i+1:])
		}
		f.After, rest = n, rest[:i]
	}
	for _, k := range faultKinds {
		if string(k) == rest {
			f.Kind = k
			return f, nil
		}
	}
	return f, fmt.Errorf("mirror: fault %q: unknown kind %q: want one of %v", s, rest, faultKinds)
}

func isKind(s string) bool {
	for _, k := range faultKinds {
		if string(k) == s {
			return true
		}
	}
	return false
}

// String returns the form ParseFault reads.
func (f Fault) String() string {
	return fmt.Sprintf("%s@%dx%d", f.Kind, f.After, f.Times)
}

// faultPlan hands out the fault, if any, for each data response in turn.
type faultPlan struct {
	mu     sync.Mutex
	faults []Fault
	n      int
	fired  map[FaultKind]int
}

func (p *faultPlan) next() (FaultKind, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	for _, f := range p.faults {
		if p.n > f.After && p.n <= f.After+f.Times {
			if p.fired == nil {
				p.fired = map[FaultKind]int{}
			}
			p.fired[f.Kind]++
			return f.Kind, true
		}
	}
	return "", false
}
