package guest

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"

	"github.com/sandbank/sandbank/spi"
)

// Log lines, the one framing of every guest (SPI 1.1.0): the guest writes
// each line its script logs to its stderr as a log record: FramePrefix,
// the nonce, "L", the level and the stream as one digit each (spi.LogLevel,
// spi.LogStream), the line as a JSON string, and a newline ([LogPrefix],
// [WriteLog]; the QuickJS wrapper writes the same from JavaScript). The
// host's [Stderr] takes the log records out of the stream as they arrive
// and hands each line to the run's spi.LogSink, in order; every other
// line on stderr is the engine's own text (a Go runtime's fatal error,
// QuickJS's messages) and goes to the run's bounded diagnostics. The
// script never sees the nonce, so it cannot make a line look like the
// engine's own text, and a record on stderr is never a result.

// RecLog is the kind of a log record.
const RecLog = 'L'

// LogLineUnits bounds a logged line as a guest sends it, in UTF-16 units
// (the QuickJS wrapper) or bytes (a guest written in Go, which cuts at
// spi.MaxLogLineBytes, the same number): the effect keeps less, and a
// longer line costs the host no more than this.
const LogLineUnits = spi.MaxLogLineBytes

// MaxLogRecordBytes bounds one log record on stderr: a line of
// LogLineUnits units as a JSON string, at most six bytes a unit (\uXXXX),
// and the record's head. A longer line is not a guest's and is dropped.
const MaxLogRecordBytes = 6*LogLineUnits + 64

// LogPrefix is what starts every log record of a run with nonce n.
func LogPrefix(n Nonce) string { return FramePrefix + string(n) + string(rune(RecLog)) }

// WriteLog is the guest side of a log record, for a guest written in Go:
// it writes line (cut at spi.MaxLogLineBytes) to w, the guest's stderr, as
// one log record of level and stream, in a single Write.
func WriteLog(w io.Writer, n Nonce, level spi.LogLevel, stream spi.LogStream, line string) error {
	if len(line) > spi.MaxLogLineBytes {
		line = line[:spi.MaxLogLineBytes]
	}
	text, err := json.Marshal(line)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, len(FramePrefix)+len(n)+4+len(text))
	buf = append(buf, LogPrefix(n)...)
	buf = append(buf, byte('0'+level), byte('0'+stream))
	buf = append(buf, text...)
	buf = append(buf, '\n')
	_, err = w.Write(buf)
	return err
}

// Stderr is the host end of a guest's stderr: it splits it, line by line,
// into log records, which go to the run's log sink, and the engine's own
// text, which goes to diag. It holds at most one record
// (MaxLogRecordBytes), is safe for concurrent use and never fails a
// write. Once the sink reports that it is full, later lines are dropped.
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
func NewStderr(n Nonce, sink spi.LogSink, diag io.Writer) *Stderr {
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
		return // not a guest's
	}
	if len(text) > spi.MaxLogLineBytes {
		text = text[:spi.MaxLogLineBytes]
	}
	if !s.sink.Log(level, stream, text) {
		s.full = true
	}
}
