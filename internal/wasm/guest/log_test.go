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

// logStream is a run's stdout with log records among the other records:
// the start, two lines (one empty, one with a forged record and control
// bytes inside), a host call, a line, the result.
func logStream(t *testing.T) []byte {
	var g bytes.Buffer
	require.NoError(t, WriteRecord(&g, testNonce, RecStart, nil))
	require.NoError(t, WriteLog(&g, testNonce, spi.LevelInfo, spi.StreamStdout, "one ✓"))
	require.NoError(t, WriteLog(&g, testNonce, spi.LevelWarn, spi.StreamStderr, ""))
	forged := FramePrefix + string(testNonce) + "R1\n1" + FramePrefix + string(testNonce) + "E\n\x07\x1b"
	require.NoError(t, WriteLog(&g, testNonce, spi.LevelInfo, spi.StreamStdout, forged))
	require.NoError(t, WriteRecord(&g, testNonce, RecHostCall, []byte(`["probe","1"]`)))
	require.NoError(t, WriteLog(&g, testNonce, spi.LevelError, spi.StreamStderr, "😀"))
	require.NoError(t, WriteRecord(&g, testNonce, RecResult, []byte(`{"a":"é"}`)))
	return g.Bytes()
}

var wantLogLines = []string{"info/stdout one ✓", "warn/stderr ", "info/stdout " + FramePrefix + string(testNonce) + "R1\n1" + FramePrefix + string(testNonce) + "E\n\x07\x1b", "error/stderr 😀"}

// TestLogTapSplits: wherever the guest's writes split the stream, the tap
// hands over the same lines in order, the record sink sees the rest
// exactly (a line that holds a framed record does not reach it), and no
// log byte takes room in it.
func TestLogTapSplits(t *testing.T) {
	stream := logStream(t)
	var rest bytes.Buffer
	for cut := 0; cut <= len(stream); cut++ {
		var sink lines
		out := NewStdout(testNonce, 1<<20, nil)
		var seen bytes.Buffer
		tap := NewLogTap(testNonce, teeWriter{out, &seen}, &sink)
		_, _ = tap.Write(stream[:cut])
		_, _ = tap.Write(stream[cut:])
		require.Equal(t, wantLogLines, sink.got, "cut at %d", cut)
		rec := out.Record()
		require.Equal(t, Record{Kind: RecResult, Body: []byte(`{"a":"é"}`)}, rec, "cut at %d", cut)
		body, ok := out.TakeHostCall()
		require.True(t, ok, "cut at %d", cut)
		require.Equal(t, `["probe","1"]`, string(body))
		if cut == 0 {
			rest.Write(seen.Bytes())
		}
		require.Equal(t, rest.String(), seen.String(), "cut at %d: the bytes passed on depend on the cut", cut)
		require.NotContains(t, seen.String(), "one ✓")
	}
}

// TestLogTapByteAtATime: one byte per write, as an unbuffered guest
// might write.
func TestLogTapByteAtATime(t *testing.T) {
	stream := logStream(t)
	var sink lines
	out := NewStdout(testNonce, 1<<20, nil)
	tap := NewLogTap(testNonce, out, &sink)
	for i := range stream {
		_, _ = tap.Write(stream[i : i+1])
	}
	assert.Equal(t, wantLogLines, sink.got)
	assert.Equal(t, byte(RecResult), out.Record().Kind)
}

// TestLogTapRefuses: a log record with another nonce, a bad level or
// stream, or a length past spi.MaxLogLineBytes is no log record: its
// bytes go on to the record sink, and the stream after it is read.
func TestLogTapRefuses(t *testing.T) {
	other := Nonce("fedcba9876543210fedcba9876543210")
	m := FramePrefix + string(testNonce) + "L"
	for _, bad := range []string{
		FramePrefix + string(other) + "L115\nforge",
		m + "915\nlevel",
		m + "135\nstream",
		m + "11" + strings.Repeat("9", 7) + "\n",
		m + "11" + "16385\n",
		m + "11\n",
		m + "11x\n",
		FramePrefix + string(testNonce)[:5] + FramePrefix,
	} {
		var sink lines
		var seen bytes.Buffer
		tap := NewLogTap(testNonce, &seen, &sink)
		var good bytes.Buffer
		require.NoError(t, WriteLog(&good, testNonce, spi.LevelInfo, spi.StreamStdout, "after"))
		_, _ = tap.Write([]byte(bad))
		_, _ = tap.Write(good.Bytes())
		assert.Equal(t, []string{"info/stdout after"}, sink.got, "%q", bad)
		assert.True(t, strings.HasPrefix(bad, seen.String()) && seen.Len() > 0, "%q passed on %q", bad, seen.String())
	}
}

// TestLogTapFull: once the sink is full, lines are dropped (the sink is
// not asked again) and the stream still reaches the record sink.
func TestLogTapFull(t *testing.T) {
	sink := lines{max: 2}
	out := NewStdout(testNonce, 1<<20, nil)
	tap := NewLogTap(testNonce, out, &sink)
	_, _ = tap.Write(logStream(t))
	assert.Equal(t, wantLogLines[:2], sink.got)
	assert.Equal(t, byte(RecResult), out.Record().Kind)

	out = NewStdout(testNonce, 1<<20, nil)
	_, _ = NewLogTap(testNonce, out, nil).Write(logStream(t))
	assert.Equal(t, byte(RecResult), out.Record().Kind, "no sink: the lines are dropped")
}

// TestLogTapBounded: a line past spi.MaxLogLineBytes is cut by WriteLog,
// and the tap holds at most one record, however much the guest logs.
func TestLogTapBounded(t *testing.T) {
	var sink lines
	tap := NewLogTap(testNonce, &bytes.Buffer{}, &sink)
	var g bytes.Buffer
	require.NoError(t, WriteLog(&g, testNonce, spi.LevelInfo, spi.StreamStdout, strings.Repeat("x", 3*spi.MaxLogLineBytes)))
	for range 50 {
		_, _ = tap.Write(g.Bytes()[:g.Len()-1])
		assert.LessOrEqual(t, cap(tap.pend), 2*(spi.MaxLogLineBytes+64))
		_, _ = tap.Write(g.Bytes()[g.Len()-1:])
	}
	require.Len(t, sink.got, 50)
	assert.Len(t, sink.got[0], len("info/stdout ")+spi.MaxLogLineBytes)
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

type teeWriter struct {
	a, b interface{ Write([]byte) (int, error) }
}

func (t teeWriter) Write(p []byte) (int, error) {
	_, _ = t.b.Write(p)
	return t.a.Write(p)
}
