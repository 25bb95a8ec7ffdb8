package guest

import (
	"bytes"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// Stdout is the host's sink for the guest's stdout. It keeps at most
// Limit bytes (the rest is dropped and counted), and calls OnStart once,
// synchronously inside the guest's write, when the start record arrives.
// It is safe for concurrent use.
type Stdout struct {
	nonce   Nonce
	limit   int
	onStart func()

	mu       sync.Mutex
	buf      []byte
	dropped  int64
	started  bool
	sealed   bool
	fileFrom int       // where the next search for a file record starts (files.go)
	startAt  time.Time // when the start record arrived
	lastAt   time.Time // when the last write kept arrived
}

// NewStdout returns a sink for a run with nonce n that keeps at most limit
// bytes and calls onStart (which may be nil) when the script starts.
func NewStdout(n Nonce, limit int, onStart func()) *Stdout {
	return &Stdout{nonce: n, limit: limit, onStart: onStart}
}

// Write implements io.Writer. It never fails, so the guest sees no error
// (an over-limit stream is visible to the host as a missing record).
func (s *Stdout) Write(p []byte) (int, error) {
	s.mu.Lock()
	if s.sealed {
		s.dropped += int64(len(p))
		s.mu.Unlock()
		return len(p), nil
	}
	room := s.limit - len(s.buf)
	if room < 0 {
		room = 0
	}
	keep := p
	if len(keep) > room {
		keep = keep[:room]
		s.dropped += int64(len(p) - room)
	}
	s.buf = append(s.buf, keep...)
	s.lastAt = time.Now()
	fire := false
	if !s.started && bytes.Contains(s.buf, s.marker(RecStart)) {
		s.started, fire = true, true
		s.startAt = s.lastAt
	}
	s.mu.Unlock()
	if fire && s.onStart != nil {
		s.onStart()
	}
	return len(p), nil
}

// Seal drops every later write. The host seals the sink when the script's
// wall clock runs out, so that a record the guest finishes writing after
// its deadline is never read: a late value is never delivered.
func (s *Stdout) Seal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sealed = true
}

// Took is how long the script ran as the stream shows it: from the start
// record to the last write kept (the conclusive record, when there is
// one). It is zero before the script started.
func (s *Stdout) Took() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return 0
	}
	return s.lastAt.Sub(s.startAt)
}

// Started reports whether the start record arrived.
func (s *Stdout) Started() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}

// Dropped is how many bytes went past the limit.
func (s *Stdout) Dropped() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

func (s *Stdout) marker(kind byte) []byte {
	m := make([]byte, 0, len(FramePrefix)+len(s.nonce)+2)
	m = append(m, FramePrefix...)
	m = append(m, s.nonce...)
	m = append(m, kind)
	if kind != RecResult && kind != RecThrew && kind != RecHostCall && kind != RecFile {
		m = append(m, '\n')
	}
	return m
}

// Record is the one conclusive record of a run, as read from stdout.
type Record struct {
	// Kind is one of the record letters (0 when no record was found).
	Kind byte
	// Body is the JSON text of a result or of a [name, message] pair.
	Body []byte
}

// Settled reports whether r is a result or a thrown record: the only two
// endings after which a parked instance may serve another run.
func (r Record) Settled() bool { return r.Kind == RecResult || r.Kind == RecThrew }

// Record returns the conclusive record the guest wrote, if any: the first
// complete result, thrown, memory, input, script, protocol or CPU record. A result or
// thrown record counts only when its length and end marker check out.
func (s *Stdout) Record() Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range []byte{RecResult, RecThrew} {
		if body, ok := s.body(k); ok {
			return Record{Kind: k, Body: body}
		}
	}
	for _, k := range []byte{RecMemory, RecInputOOM, RecScriptOOM, RecProtocol, RecCPU} {
		if bytes.Contains(s.buf, s.marker(k)) {
			return Record{Kind: k}
		}
	}
	return Record{}
}

// body finds a length-prefixed record of kind k and checks it.
func (s *Stdout) body(k byte) ([]byte, bool) {
	m := s.marker(k)
	i := bytes.Index(s.buf, m)
	if i < 0 {
		return nil, false
	}
	rest := s.buf[i+len(m):]
	nl := bytes.IndexByte(rest, '\n')
	if nl < 1 || nl > 12 {
		return nil, false
	}
	units, err := strconv.Atoi(string(rest[:nl]))
	if err != nil || units < 0 {
		return nil, false
	}
	rest = rest[nl+1:]
	n, ok := utf16Prefix(rest, units)
	if !ok {
		return nil, false
	}
	if !bytes.HasPrefix(rest[n:], s.marker('E')) {
		return nil, false
	}
	return rest[:n:n], true
}

// utf16Prefix returns how many bytes of b encode exactly units UTF-16
// code units (as QuickJS writes a JavaScript string: a supplementary
// character is four bytes and two units), or false when b is shorter or
// is not well-formed UTF-8.
func utf16Prefix(b []byte, units int) (int, bool) {
	n := 0
	for units > 0 {
		if n >= len(b) {
			return 0, false
		}
		c := b[n]
		if c < utf8.RuneSelf {
			n++
			units--
			continue
		}
		r, size := utf8.DecodeRune(b[n:])
		if r == utf8.RuneError && size <= 1 {
			return 0, false
		}
		n += size
		if r >= 0x10000 {
			units -= 2
		} else {
			units--
		}
	}
	return n, units == 0
}
