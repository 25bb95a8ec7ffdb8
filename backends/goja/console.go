package goja

import (
	"strings"

	js "github.com/dop251/goja"

	"github.com/sandbank/sandbank/spi"
)

// consoleMethods maps console's methods to the level and stream of the
// lines they write, as Node's console does: log, info and debug to
// stdout, warn, error and trace to stderr.
var consoleMethods = []struct {
	name   string
	level  spi.LogLevel
	stream spi.LogStream
}{
	{"log", spi.LevelInfo, spi.StreamStdout},
	{"info", spi.LevelInfo, spi.StreamStdout},
	{"debug", spi.LevelDebug, spi.StreamStdout},
	{"warn", spi.LevelWarn, spi.StreamStderr},
	{"error", spi.LevelError, spi.StreamStderr},
	{"trace", spi.LevelDebug, spi.StreamStderr},
}

// installConsole gives the script console.log, info, warn, error, debug
// and trace, and print (info, stdout). Each call writes one line to sink:
// its arguments converted to strings and joined by spaces, cut at
// spi.MaxLogLineBytes (the conversion stops there, so a huge argument
// costs no more). With no sink, or once the sink is full, the methods
// accept anything and do nothing.
func installConsole(rt *js.Runtime, sink spi.LogSink) {
	full := sink == nil
	method := func(level spi.LogLevel, stream spi.LogStream) func(js.FunctionCall) js.Value {
		return func(call js.FunctionCall) js.Value {
			if full {
				return js.Undefined()
			}
			if !sink.Log(level, stream, consoleLine(call.Arguments)) {
				full = true
			}
			return js.Undefined()
		}
	}
	console := rt.NewObject()
	for _, m := range consoleMethods {
		_ = console.Set(m.name, method(m.level, m.stream))
	}
	_ = rt.Set("console", console)
	_ = rt.Set("print", method(spi.LevelInfo, spi.StreamStdout))
}

// consoleLine joins the arguments' string values with spaces, up to
// spi.MaxLogLineBytes.
func consoleLine(args []js.Value) string {
	if len(args) == 1 {
		s := args[0].String()
		if len(s) > spi.MaxLogLineBytes {
			s = s[:spi.MaxLogLineBytes]
		}
		return s
	}
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		s := a.String()
		if room := spi.MaxLogLineBytes - b.Len(); len(s) > room {
			b.WriteString(s[:max(room, 0)])
			break
		}
		b.WriteString(s)
	}
	return b.String()
}
