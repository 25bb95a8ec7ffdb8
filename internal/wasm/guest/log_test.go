package guest

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// lines is an spi.LogSink that keeps its lines and is full after max.
type lines struct {
	mu  sync.Mutex
	max int
	got []string
}

func (l *lines) Log(level spi.LogLevel, stream spi.LogStream, line string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.max > 0 && len(l.got) >= l.max {
		return false
	}
	l.got = append(l.got, level.String()+"/"+stream.String()+" "+line)
	return l.max == 0 || len(l.got) < l.max
}

// logStream is a run's stderr with log records among the engine's own
// text: text, two lines (one empty, one with a forged record and control
// bytes inside), text, a line, text without a newline.
func logStream(t *testing.T) []byte {
	var g bytes.Buffer
	g.WriteString("engine says hi\n")
	require.NoError(t, WriteLog(&g, testNonce, spi.LevelInfo, spi.StreamStdout, "one ✓"))
	require.NoError(t, WriteLog(&g, testNonce, spi.LevelWarn, spi.StreamStderr, ""))
	forged := FramePrefix + string(testNonce) + "R1\n1" + FramePrefix + string(testNonce) + "E\n\x07\x1b"
	require.NoError(t, WriteLog(&g, testNonce, spi.LevelInfo, spi.StreamStdout, forged))
	g.WriteString("fatal error: out of memory\n")
	require.NoError(t, WriteLog(&g, testNonce, spi.LevelError, spi.StreamStderr, "😀"))
	g.WriteString("tail")
	return g.Bytes()
}

var (
	wantLogLines = []string{"info/stdout one ✓", "warn/stderr ", "info/stdout " + FramePrefix + string(testNonce) + "R1\n1" + FramePrefix + string(testNonce) + "E\n\x07\x1b", "error/stderr 😀"}
	wantDiag     = "engine says hi\nfatal error: out of memory\n"
)

// TestStderrSplits: wherever the guest's writes split the stream, the
// log lines reach the sink in order and the engine's text reaches diag
// exactly (a line not yet ended stays held).
func TestStderrSplits(t *testing.T) {
	stream := logStream(t)
	for cut := 0; cut <= len(stream); cut++ {
		var sink lines
		diag := NewCapped(1 << 20)
		w := NewStderr(testNonce, &sink, diag)
		_, _ = w.Write(stream[:cut])
		_, _ = w.Write(stream[cut:])
		require.Equal(t, wantLogLines, sink.got, "cut at %d", cut)
		require.Equal(t, wantDiag, diag.Head(1<<20), "cut at %d", cut)
	}
}

// TestStderrByteAtATime: one byte per write, as an unbuffered guest
// might write.
func TestStderrByteAtATime(t *testing.T) {
	stream := logStream(t)
	var sink lines
	diag := NewCapped(1 << 20)
	w := NewStderr(testNonce, &sink, diag)
	for i := range stream {
		_, _ = w.Write(stream[i : i+1])
	}
	assert.Equal(t, wantLogLines, sink.got)
	assert.Equal(t, wantDiag, diag.Head(1<<20))
}

// TestStderrRefuses: a record of another nonce is the engine's text; a
// record of the run's nonce that is not a JSON string is dropped; the
// stream after either is read.
func TestStderrRefuses(t *testing.T) {
	other := Nonce("fedcba9876543210fedcba9876543210")
	m := LogPrefix(testNonce)
	for bad, text := range map[string]bool{
		LogPrefix(other) + `11"forge"` + "\n": true,
		m + "11forge\n":                       false,
		m + "1\n":                             false,
		m + `11"open` + "\n":                  false,
	} {
		var sink lines
		diag := NewCapped(1 << 20)
		w := NewStderr(testNonce, &sink, diag)
		var good bytes.Buffer
		require.NoError(t, WriteLog(&good, testNonce, spi.LevelInfo, spi.StreamStdout, "after"))
		_, _ = w.Write([]byte(bad))
		_, _ = w.Write(good.Bytes())
		assert.Equal(t, []string{"info/stdout after"}, sink.got, "%q", bad)
		if text {
			assert.Equal(t, bad, diag.Head(1<<20))
		} else {
			assert.Empty(t, diag.Head(1<<20), "%q", bad)
		}
	}
}

// TestStderrFull: once the sink is full, lines are dropped (the sink is
// not asked again) and the text still reaches diag.
func TestStderrFull(t *testing.T) {
	sink := lines{max: 2}
	diag := NewCapped(1 << 20)
	_, _ = NewStderr(testNonce, &sink, diag).Write(logStream(t))
	assert.Equal(t, wantLogLines[:2], sink.got)
	assert.Equal(t, wantDiag, diag.Head(1<<20))

	diag = NewCapped(1 << 20)
	_, _ = NewStderr(testNonce, nil, diag).Write(logStream(t))
	assert.Equal(t, wantDiag, diag.Head(1<<20), "no sink: the lines are dropped")
}

// TestStderrBounded: a line past spi.MaxLogLineBytes is cut by WriteLog;
// a record past MaxLogRecordBytes is dropped whole and the stream after
// it read; the sink holds at most one record, however much the guest
// logs.
func TestStderrBounded(t *testing.T) {
	var sink lines
	diag := NewCapped(1 << 20)
	w := NewStderr(testNonce, &sink, diag)
	var g bytes.Buffer
	require.NoError(t, WriteLog(&g, testNonce, spi.LevelInfo, spi.StreamStdout, strings.Repeat("x", 3*spi.MaxLogLineBytes)))
	for range 50 {
		_, _ = w.Write(g.Bytes()[:g.Len()-1])
		assert.LessOrEqual(t, cap(w.line), 2*MaxLogRecordBytes)
		_, _ = w.Write(g.Bytes()[g.Len()-1:])
	}
	require.Len(t, sink.got, 50)
	assert.Len(t, sink.got[0], len("info/stdout ")+spi.MaxLogLineBytes)

	_, _ = w.Write([]byte(LogPrefix(testNonce) + `21"` + strings.Repeat("x", MaxLogRecordBytes) + "\"\nmore text\n"))
	assert.Len(t, sink.got, 50, "an oversized record is dropped")
	assert.Equal(t, "more text\n", diag.Head(1<<20), "the text after it is kept")
}

// TestReadReply: what Reply writes, ReadReply reads back exactly, one
// reply after another on the same reader; a truncated or malformed reply
// is ErrNoReply.
func TestReadReply(t *testing.T) {
	var in bytes.Buffer
	in.Write(Reply([]byte(`{"a":"é😀"}`), nil))
	in.Write(Reply(nil, errors.New("no ✓\nsecond line")))
	in.Write(Reply([]byte(``), nil))
	r := bufio.NewReader(&in)
	body, failed, err := ReadReply(r)
	require.NoError(t, err)
	assert.False(t, failed)
	assert.Equal(t, `{"a":"é😀"}`, string(body))
	body, failed, err = ReadReply(r)
	require.NoError(t, err)
	assert.True(t, failed)
	assert.Equal(t, "no ✓\nsecond line", string(body))
	body, failed, err = ReadReply(r)
	require.NoError(t, err)
	assert.False(t, failed)
	assert.Empty(t, body)
	_, _, err = ReadReply(r)
	assert.ErrorIs(t, err, ErrNoReply, "end of stdin")

	for _, bad := range []string{"O5\nabc", "X3\nabc", "O-1\n", "O\n", "O" + strings.Repeat("9", 20) + "\n"} {
		_, _, err := ReadReply(bufio.NewReader(strings.NewReader(bad)))
		assert.ErrorIs(t, err, ErrNoReply, "%q", bad)
	}
}

// TestStderrLoneSurrogate: a line the QuickJS wrapper wrote with a lone
// surrogate (JSON.stringify escapes it) reaches the sink as U+FFFD.
func TestStderrLoneSurrogate(t *testing.T) {
	var sink lines
	_, _ = NewStderr(testNonce, &sink, NewCapped(1)).Write([]byte(LogPrefix(testNonce) + `42"two \ud800"` + "\n"))
	assert.Equal(t, []string{"error/stderr two \uFFFD"}, sink.got)
}
