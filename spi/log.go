package spi

import (
	"fmt"
	"io"
	"sync"
)

// LogLevel is the severity of a line a script logged. The zero value is
// invalid; values are never renumbered.
type LogLevel int

// The log levels. A language without levels (Starlark's print, a wasm
// module writing to stdout) logs at LevelInfo; one writing to stderr, at
// LevelError.
const (
	LevelDebug LogLevel = iota + 1
	LevelInfo
	LevelWarn
	LevelError
)

var logLevelNames = [...]string{LevelDebug: "debug", LevelInfo: "info", LevelWarn: "warn", LevelError: "error"}

// Valid reports whether l is one of the defined levels.
func (l LogLevel) Valid() bool { return l >= LevelDebug && l <= LevelError }

// String returns "debug", "info", "warn" or "error", or "LogLevel(N)".
func (l LogLevel) String() string {
	if !l.Valid() {
		return fmt.Sprintf("LogLevel(%d)", int(l))
	}
	return logLevelNames[l]
}

// MarshalText implements encoding.TextMarshaler.
func (l LogLevel) MarshalText() ([]byte, error) {
	if !l.Valid() {
		return nil, fmt.Errorf("spi: invalid log level %d", int(l))
	}
	return []byte(l.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (l *LogLevel) UnmarshalText(b []byte) error {
	for v := LevelDebug; v <= LevelError; v++ {
		if string(b) == logLevelNames[v] {
			*l = v
			return nil
		}
	}
	return fmt.Errorf("spi: unknown log level %q", b)
}

// LogStream is the stream a script wrote a line to. The zero value is
// invalid; values are never renumbered.
type LogStream int

// The log streams. JavaScript's console.log, info and debug write to
// StreamStdout, console.warn and error to StreamStderr; Starlark's print
// writes to StreamStdout.
const (
	StreamStdout LogStream = iota + 1
	StreamStderr
)

var logStreamNames = [...]string{StreamStdout: "stdout", StreamStderr: "stderr"}

// Valid reports whether s is one of the defined streams.
func (s LogStream) Valid() bool { return s >= StreamStdout && s <= StreamStderr }

// String returns "stdout" or "stderr", or "LogStream(N)".
func (s LogStream) String() string {
	if !s.Valid() {
		return fmt.Sprintf("LogStream(%d)", int(s))
	}
	return logStreamNames[s]
}

// MarshalText implements encoding.TextMarshaler.
func (s LogStream) MarshalText() ([]byte, error) {
	if !s.Valid() {
		return nil, fmt.Errorf("spi: invalid log stream %d", int(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *LogStream) UnmarshalText(b []byte) error {
	for v := StreamStdout; v <= StreamStderr; v++ {
		if string(b) == logStreamNames[v] {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("spi: unknown log stream %q", b)
}

// MaxLogLineBytes is the most of one line the effect keeps before it
// bounds the line's text. A backend may cut a line to this many bytes
// before handing it over (and should, when building a line costs it
// memory: joining console.log's arguments, buffering a stream up to its
// newline); cutting it shorter loses text the record would have kept.
const MaxLogLineBytes = 16 << 10

// LogSink receives the lines a script logs during one evaluation, in the
// order the script wrote them. The effect owns it: it bounds, scrubs and
// counts every line, and a sink never blocks. It is safe for concurrent
// use, and for use after Evaluate returned (late lines are dropped).
type LogSink interface {
	// Log records one line, without its trailing newline. It reports
	// false when no later line can be recorded or counted (the effect's
	// sink: once the run has ended), so the backend may stop producing
	// them. The effect's sink keeps reporting true past the log's bounds,
	// counting each dropped line for the record's cut marker.
	Log(level LogLevel, stream LogStream, line string) bool
}

// Log sends a line to req.Logs when the request has a sink, and reports
// whether more lines are wanted: false when the request has no sink or the
// sink is full.
func (req Request) Log(level LogLevel, stream LogStream, line string) bool {
	if req.Logs == nil {
		return false
	}
	return req.Logs.Log(level, stream, line)
}

// LineWriter is an io.Writer that turns a byte stream (a wasm module's
// stdout or stderr) into lines for a LogSink: each '\n' ends a line, a
// line longer than MaxLogLineBytes is handed over at that length and the
// rest of it, up to its newline, is discarded. Flush hands over a last line
// without a newline. It buffers at most MaxLogLineBytes, whatever is
// written, and is safe for concurrent use. A nil sink discards everything.
type LineWriter struct {
	sink    LogSink
	level   LogLevel
	stream  LogStream
	mu      sync.Mutex
	buf     []byte
	skip    bool // the current line was handed over at the bound
	stopped bool // the sink is full
}

// NewLineWriter returns a LineWriter writing lines at level to stream.
func NewLineWriter(sink LogSink, level LogLevel, stream LogStream) *LineWriter {
	return &LineWriter{sink: sink, level: level, stream: stream, stopped: sink == nil}
}

var _ io.Writer = (*LineWriter)(nil)

// Write implements io.Writer. It always reports len(p) written: a full
// sink discards, it does not fail the script's write.
func (w *LineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 && !w.stopped {
		i := indexNewline(p)
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !w.skip {
			room := MaxLogLineBytes - len(w.buf)
			if len(chunk) > room {
				w.buf = append(w.buf, chunk[:room]...)
				w.emit()
				w.skip = true
			} else {
				w.buf = append(w.buf, chunk...)
			}
		}
		if i < 0 {
			break
		}
		if !w.skip {
			w.emit()
		}
		w.skip = false
		p = p[i+1:]
	}
	return n, nil
}

// Flush hands over a pending line that has no newline yet.
func (w *LineWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 && !w.stopped {
		w.emit()
	}
	w.skip = false
}

func (w *LineWriter) emit() {
	if !w.sink.Log(w.level, w.stream, string(w.buf)) {
		w.stopped = true
	}
	w.buf = w.buf[:0]
}

func indexNewline(p []byte) int {
	for i, c := range p {
		if c == '\n' {
			return i
		}
	}
	return -1
}
