package extism

import (
	"sync"

	xt "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/sandbank/sandbank/spi"
)

// enableSDKLogs lets plugin log calls reach the instance's logger. The
// Extism SDK filters them by one process-wide level whose default drops
// every call; the same level filters the SDK's own diagnostics, which go
// to standard output while an instance is created (before it has our
// logger), at debug and trace. So New sets the level to info, once: a
// plugin's log_info, log_warn and log_error reach its run's log, and its
// log_debug and log_trace, like the SDK's diagnostics, reach no one. It is
// the process's level: every Extism plugin in the process logs at info and
// above.
var enableSDKLogs = sync.OnceFunc(func() { xt.SetLogLevel(xt.LogLevelInfo) })

// logTo returns the logger of an instance writing to sink: info on
// stdout, warn and error on stderr (debug and trace never arrive: see
// enableSDKLogs). Each message is one line, cut at spi.MaxLogLineBytes. A
// nil sink drops everything.
func logTo(sink spi.LogSink) func(xt.LogLevel, string) {
	if sink == nil {
		return func(xt.LogLevel, string) {}
	}
	full := false
	return func(level xt.LogLevel, msg string) {
		if full {
			return
		}
		if len(msg) > spi.MaxLogLineBytes {
			msg = msg[:spi.MaxLogLineBytes]
		}
		l, s := spi.LevelInfo, spi.StreamStdout
		switch level {
		case xt.LogLevelTrace, xt.LogLevelDebug:
			l = spi.LevelDebug
		case xt.LogLevelWarn:
			l, s = spi.LevelWarn, spi.StreamStderr
		case xt.LogLevelError:
			l, s = spi.LevelError, spi.StreamStderr
		}
		if !sink.Log(l, s, msg) {
			full = true
		}
	}
}

// stdio is a run's WASI standard output and error, line by line into the
// request's sink (info on stdout, error on stderr).
type stdio struct {
	out, err *spi.LineWriter
}

// newStdio returns the writers for sink, or nil when there is no sink.
func newStdio(sink spi.LogSink) *stdio {
	if sink == nil {
		return nil
	}
	return &stdio{
		out: spi.NewLineWriter(sink, spi.LevelInfo, spi.StreamStdout),
		err: spi.NewLineWriter(sink, spi.LevelError, spi.StreamStderr),
	}
}

// config returns the module configuration with the writers as the
// plugin's standard output and error.
func (s *stdio) config(c wazero.ModuleConfig) wazero.ModuleConfig {
	if s == nil {
		return c
	}
	return c.WithStdout(s.out).WithStderr(s.err)
}

// flush hands over a last line without a newline.
func (s *stdio) flush() {
	if s != nil {
		s.out.Flush()
		s.err.Flush()
	}
}
