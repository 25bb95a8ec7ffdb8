package spi_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

type line struct {
	level  spi.LogLevel
	stream spi.LogStream
	text   string
}

// memSink keeps lines, and is full after max lines (0: never).
type memSink struct {
	mu    sync.Mutex
	lines []line
	max   int
}

func (s *memSink) Log(level spi.LogLevel, stream spi.LogStream, text string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.max > 0 && len(s.lines) >= s.max {
		return false
	}
	s.lines = append(s.lines, line{level, stream, text})
	return s.max == 0 || len(s.lines) < s.max
}

func (s *memSink) texts() []string {
	var out []string
	for _, l := range s.lines {
		out = append(out, l.text)
	}
	return out
}

func TestLineWriterSplitsLines(t *testing.T) {
	s := &memSink{}
	w := spi.NewLineWriter(s, spi.LevelError, spi.StreamStderr)
	for _, chunk := range []string{"one\ntw", "o\n", "\n", "three"} {
		n, err := w.Write([]byte(chunk))
		require.NoError(t, err)
		assert.Equal(t, len(chunk), n)
	}
	assert.Equal(t, []string{"one", "two", ""}, s.texts())
	w.Flush()
	assert.Equal(t, []string{"one", "two", "", "three"}, s.texts())
	assert.Equal(t, spi.LevelError, s.lines[0].level)
	assert.Equal(t, spi.StreamStderr, s.lines[0].stream)
	w.Flush()
	assert.Len(t, s.lines, 4, "nothing pending, nothing handed over")
}

// A line longer than MaxLogLineBytes is handed over at the bound and the
// rest of it discarded: the writer never buffers more, whatever is
// written.
func TestLineWriterBoundsALine(t *testing.T) {
	s := &memSink{}
	w := spi.NewLineWriter(s, spi.LevelInfo, spi.StreamStdout)
	big := strings.Repeat("x", spi.MaxLogLineBytes+100)
	for range 3 { // in pieces: the bound holds across writes
		_, _ = w.Write([]byte(big[:len(big)/3]))
	}
	_, _ = w.Write([]byte(big[:len(big)-3*(len(big)/3)] + "\nnext\n"))
	require.Equal(t, 2, len(s.lines))
	assert.Len(t, s.lines[0].text, spi.MaxLogLineBytes)
	assert.Equal(t, "next", s.lines[1].text)
}

// Once the sink is full the writer stops handing lines over.
func TestLineWriterStopsWhenFull(t *testing.T) {
	s := &memSink{max: 2}
	w := spi.NewLineWriter(s, spi.LevelInfo, spi.StreamStdout)
	_, _ = w.Write([]byte("a\nb\nc\nd\n"))
	assert.Equal(t, []string{"a", "b"}, s.texts())
	n, err := w.Write([]byte("more\n"))
	assert.NoError(t, err, "a full sink does not fail the script's write")
	assert.Equal(t, 5, n)

	nilw := spi.NewLineWriter(nil, spi.LevelInfo, spi.StreamStdout)
	_, err = nilw.Write([]byte("dropped\n"))
	assert.NoError(t, err)
	nilw.Flush()
}

func TestRequestLog(t *testing.T) {
	assert.False(t, spi.Request{}.Log(spi.LevelInfo, spi.StreamStdout, "x"), "no sink: nothing wanted")
	s := &memSink{}
	assert.True(t, spi.Request{Logs: s}.Log(spi.LevelDebug, spi.StreamStdout, "x"))
	assert.Equal(t, []line{{spi.LevelDebug, spi.StreamStdout, "x"}}, s.lines)
}

func TestLogEnums(t *testing.T) {
	assert.Equal(t, []int{1, 2, 3, 4}, []int{int(spi.LevelDebug), int(spi.LevelInfo), int(spi.LevelWarn), int(spi.LevelError)})
	assert.Equal(t, []int{1, 2}, []int{int(spi.StreamStdout), int(spi.StreamStderr)})
	b, err := json.Marshal(struct {
		L spi.LogLevel
		S spi.LogStream
	}{spi.LevelWarn, spi.StreamStderr})
	require.NoError(t, err)
	assert.JSONEq(t, `{"L":"warn","S":"stderr"}`, string(b))
	var l spi.LogLevel
	assert.Error(t, l.UnmarshalText([]byte("loud")))
	require.NoError(t, l.UnmarshalText([]byte("debug")))
	assert.Equal(t, spi.LevelDebug, l)
	var s spi.LogStream
	assert.Error(t, s.UnmarshalText([]byte("stdin")))
	_, err = spi.LogLevel(0).MarshalText()
	assert.Error(t, err)
	_, err = spi.LogStream(3).MarshalText()
	assert.Error(t, err)
	assert.Equal(t, "LogLevel(9)", spi.LogLevel(9).String())
	assert.Equal(t, "LogStream(0)", spi.LogStream(0).String())
}
