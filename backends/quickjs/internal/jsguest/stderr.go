package jsguest

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"

	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
	"github.com/sandbank/sandbank/spi"
)

// The host end of the guest's stderr, line by line: the wrapper writes
// each line the script logs (print, console.*) as a record carrying the
// run's nonce (LogPrefix), which goes to the request's log sink;
// everything else on stderr is the engine's own text and goes to the
// run's bounded stderr buffer, as before.

// MaxLogRecordBytes bounds one log record on stderr: the wrapper's line
// (LogLineUnits UTF-16 units) as a JSON string, at most six bytes a unit
// (\uXXXX), and the record's head. A longer line is not the wrapper's and
// is dropped.
const MaxLogRecordBytes = 6*LogLineUnits + 64

// Stderr splits the guest's stderr into log records and the engine's own
// text. It is safe for concurrent use and never fails a write.
type Stderr struct {
	prefix []byte
	sink   spi.LogSink // nil: log records are dropped
	diag   io.Writer

	mu   sync.Mutex
	line []byte
	skip bool // the current line is past MaxLogRecordBytes: to its newline, to diag or dropped
	log  bool // the skipped line is a log record (dropped) rather than text (to diag)
	full bool // the sink said it is full
}

// NewStderr returns the stderr sink of a run with nonce n: log records go
// to sink (nil drops them), everything else to diag, which must never
// fail.
func NewStderr(n wasmguest.Nonce, sink spi.LogSink, diag io.Writer) *Stderr {
	return &Stderr{prefix: []byte(LogPrefix(n)), sink: sink, diag: diag}
}

var _ io.Writer = (*Stderr)(nil)

// Write implements io.Writer.
func (s *Stderr) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i+1]
		}
		p = p[len(chunk):]
		if s.skip {
			if !s.log {
				_, _ = s.diag.Write(chunk)
			}
			if i >= 0 {
				s.skip = false
			}
			continue
		}
		if len(s.line)+len(chunk) > MaxLogRecordBytes {
			s.log = bytes.HasPrefix(append(s.line, chunk...), s.prefix)
			if !s.log {
				_, _ = s.diag.Write(s.line)
				_, _ = s.diag.Write(chunk)
			}
			s.line = s.line[:0]
			s.skip = i < 0
			continue
		}
		s.line = append(s.line, chunk...)
		if i >= 0 {
			s.handle(s.line)
			s.line = s.line[:0]
		}
	}
	return n, nil
}

// handle routes one complete line (with its newline).
func (s *Stderr) handle(line []byte) {
	rest, ok := bytes.CutPrefix(line, s.prefix)
	if !ok {
		_, _ = s.diag.Write(line)
		return
	}
	if s.sink == nil || s.full || len(rest) < 3 {
		return
	}
	level, stream := spi.LogLevel(rest[0]-'0'), spi.LogStream(rest[1]-'0')
	var text string
	if json.Unmarshal(bytes.TrimSuffix(rest[2:], []byte("\n")), &text) != nil {
		return // not the wrapper's
	}
	if len(text) > spi.MaxLogLineBytes {
		text = text[:spi.MaxLogLineBytes]
	}
	if !s.sink.Log(level, stream, text) {
		s.full = true
	}
}
