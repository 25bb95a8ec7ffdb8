package extism

import (
	"sync"

	xt "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/sandbank/sandbank/spi"
)

// enableSDKLogs lets plugin log calls reach the instance's logger. The
// Extism SDK filters them by one process-wide level whose default drops
// every call, so New sets it to trace, once: every log call of every
// Extism plugin in the process then reaches its instance's logger (ours
// each write to their run's sink; an instance nobody gave a logger writes
// to standard output, the SDK's default).
var enableSDKLogs = sync.OnceFunc(func() { xt.SetLogLevel(xt.LogLevelTrace) })

// logTo returns the logger of an instance that calls fn, writing to sink:
// trace and debug at debug, info at info (stdout), warn and error on
// stderr. Each message is one line, cut at spi.MaxLogLineBytes. A nil sink
// drops everything.
//
// The SDK writes its own diagnostics to the same logger ("Initializing
// runtime …", "Calling function : run"), and the last of them, "Calling
// function : " and the function's name, comes just before the plugin's
// function starts: the logger delivers what comes after it, the plugin's
// own lines. (Lines a WASI reactor's _initialize logs, which the SDK runs
// before that, are not delivered.)
func logTo(sink spi.LogSink, fn string) func(xt.LogLevel, string) {
	if sink == nil {
		return func(xt.LogLevel, string) {}
	}
	start := sdkCalling + fn
	full, started := false, false
	return func(level xt.LogLevel, msg string) {
		if !started {
			started = level == xt.LogLevelDebug && msg == start
			return
		}
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

// sdkCalling starts the SDK's last diagnostic before it calls the
// plugin's function (go-sdk v1.7.1, extism.go).
const sdkCalling = "Calling function : "

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
