package guest

import (
	"bytes"
	"io"
	"strconv"
	"sync"

	"github.com/sandbank/sandbank/spi"
)

// Log lines over the framed stdio protocol (SPI 1.1.0), for a guest that
// keeps the script away from its stdout (the starlark-wasm guest): the
// guest writes each line the script logs as a log record, FramePrefix,
// the nonce, "L", the level and the stream as one digit each (spi.LogLevel,
// spi.LogStream), the line's length in bytes, a newline and the line. The
// host's [LogTap] takes the log records out of the stream as they arrive,
// hands each line to the run's spi.LogSink, in order, and passes every
// other byte on to the [Stdout] sink, so that log lines never take the
// room of the conclusive record.

// RecLog is the kind of a log record: <level><stream><bytes>\n<line>.
const RecLog = 'L'

// maxLogHeaderDigits bounds the length field of a log record: a line is
// at most spi.MaxLogLineBytes (five digits).
const maxLogHeaderDigits = 6

// WriteLog is the guest side of a log record, for a guest written in Go:
// it writes line (cut at spi.MaxLogLineBytes) to w as one log record of
// level and stream, in a single Write.
func WriteLog(w io.Writer, n Nonce, level spi.LogLevel, stream spi.LogStream, line string) error {
	if len(line) > spi.MaxLogLineBytes {
		line = line[:spi.MaxLogLineBytes]
	}
	buf := make([]byte, 0, len(FramePrefix)+len(n)+12+len(line))
	buf = append(buf, FramePrefix...)
	buf = append(buf, n...)
	buf = append(buf, RecLog, byte('0'+level), byte('0'+stream))
	buf = strconv.AppendInt(buf, int64(len(line)), 10)
	buf = append(buf, '\n')
	buf = append(buf, line...)
	_, err := w.Write(buf)
	return err
}

// LogTap is the host's writer in front of a run's [Stdout]: it takes the
// log records of the run's nonce out of the stream, wherever the guest's
// writes split them, and hands each line to the sink; every other byte
// goes on to the Stdout sink unchanged and in order. It holds at most one
// log record (spi.MaxLogLineBytes plus a header) and never fails a write.
// Once the sink reports that it is full, later lines are dropped. A
// malformed log record is not a log record: its bytes go on to Stdout.
// It is safe for concurrent use.
type LogTap struct {
	next   io.Writer
	sink   spi.LogSink
	marker []byte // FramePrefix, the nonce, RecLog

	mu     sync.Mutex
	pend   []byte // the record being read: a prefix of marker, then its header and line
	state  tapState
	level  spi.LogLevel
	stream spi.LogStream
	digits int
	want   int // the line's length, then what is left of it
	full   bool
}

type tapState int

const (
	tapScan   tapState = iota // outside a log record
	tapMarker                 // pend is a proper prefix of marker
	tapLevel
	tapStream
	tapLength
	tapLine
)

// NewLogTap returns a tap for a run with nonce n that writes the rest of
// the stream to next and the lines to sink (nil: lines are dropped).
func NewLogTap(n Nonce, next io.Writer, sink spi.LogSink) *LogTap {
	m := make([]byte, 0, len(FramePrefix)+len(n)+1)
	m = append(m, FramePrefix...)
	m = append(m, n...)
	m = append(m, RecLog)
	return &LogTap{next: next, sink: sink, marker: m, full: sink == nil}
}

// Write implements io.Writer. It always reports len(p) written.
func (t *LogTap) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		switch t.state {
		case tapScan:
			i := bytes.Index(p, t.marker)
			if i < 0 {
				k := partialSuffix(p, t.marker)
				t.forward(p[:len(p)-k])
				if k > 0 {
					t.pend = append(t.pend[:0], p[len(p)-k:]...)
					t.state = tapMarker
				}
				return n, nil
			}
			t.forward(p[:i])
			t.pend = append(t.pend[:0], t.marker...)
			t.state = tapLevel
			p = p[i+len(t.marker):]
			continue
		case tapLine:
			take := min(t.want, len(p))
			t.pend = append(t.pend, p[:take]...)
			t.want -= take
			p = p[take:]
			if t.want == 0 {
				t.deliver()
			}
			continue
		}
		// One byte of the marker or the header.
		if !t.step(p[0]) {
			t.malformed() // p[0] is read again, outside a record
			continue
		}
		p = p[1:]
	}
	return n, nil
}

// step reads one byte of the marker or the header, or reports false when
// c cannot come next.
func (t *LogTap) step(c byte) bool {
	switch t.state {
	case tapMarker:
		if c != t.marker[len(t.pend)] {
			return false
		}
		if t.pend = append(t.pend, c); len(t.pend) == len(t.marker) {
			t.state = tapLevel
		}
	case tapLevel:
		t.level = spi.LogLevel(c - '0')
		if c < '0' || !t.level.Valid() {
			return false
		}
		t.pend, t.state = append(t.pend, c), tapStream
	case tapStream:
		t.stream = spi.LogStream(c - '0')
		if c < '0' || !t.stream.Valid() {
			return false
		}
		t.pend, t.state, t.want, t.digits = append(t.pend, c), tapLength, 0, 0
	case tapLength:
		switch {
		case c == '\n' && t.digits > 0:
			t.pend = append(t.pend, c)
			t.state = tapLine
			if t.want == 0 {
				t.deliver()
			}
		case c >= '0' && c <= '9' && t.digits < maxLogHeaderDigits:
			t.want = t.want*10 + int(c-'0')
			t.digits++
			if t.want > spi.MaxLogLineBytes {
				return false
			}
			t.pend = append(t.pend, c)
		default:
			return false
		}
	}
	return true
}

// deliver hands the line read to the sink and starts scanning again.
func (t *LogTap) deliver() {
	line := t.pend[bytes.IndexByte(t.pend[len(t.marker):], '\n')+len(t.marker)+1:]
	if !t.full && !t.sink.Log(t.level, t.stream, string(line)) {
		t.full = true
	}
	t.pend, t.state = t.pend[:0], tapScan
}

// malformed gives up on the record being read: its bytes go on to Stdout.
func (t *LogTap) malformed() {
	t.forward(t.pend)
	t.pend, t.state = t.pend[:0], tapScan
}

func (t *LogTap) forward(p []byte) {
	if len(p) > 0 {
		_, _ = t.next.Write(p)
	}
}

// partialSuffix is the length of the longest suffix of p that is a proper
// prefix of m. m's first byte (FramePrefix's record separator) occurs
// nowhere else in m, so only the suffix from p's last such byte can be.
func partialSuffix(p, m []byte) int {
	i := bytes.LastIndexByte(p[max(0, len(p)-len(m)+1):], m[0])
	if i < 0 {
		return 0
	}
	k := min(len(p), len(m)-1) - i
	if bytes.HasPrefix(m, p[len(p)-k:]) {
		return k
	}
	return 0
}
