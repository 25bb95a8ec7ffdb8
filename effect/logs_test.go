package effect

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

func TestLogsBoundedByLines(t *testing.T) {
	var accepted []bool
	f := newFixture(t, func(ctx context.Context, req spi.Request) (spi.Outcome, error) {
		for _, l := range []string{"a", "b", "c", "dd", "e"} {
			accepted = append(accepted, req.Log(spi.LevelInfo, spi.StreamStdout, l))
		}
		return okOutcome(`1`), nil
	}, &Options{MaxLogLines: 2})
	rec, err := f.e.Run(context.Background(), Call{Script: f.addr})
	require.NoError(t, err)
	require.Len(t, rec.Logs, 2)
	assert.Equal(t, []string{"a", "b"}, []string{rec.Logs[0].Text, rec.Logs[1].Text})
	assert.Equal(t, &record.LogsCut{Lines: 3, Bytes: 4}, rec.LogsCut, "the cut marker counts what was dropped")
	assert.Equal(t, []bool{true, true, true, true, true}, accepted, "the sink wants every line, to count it")
}

// A backend stops handing lines over once the sink returns false (the
// goja console, Starlark's print and the wasm guests' log taps all do):
// the sink never does during a run, so the cut counts every line and
// byte the script wrote past the bound, not only the first.
func TestLogsCutCountsEveryDroppedLine(t *testing.T) {
	f := newFixture(t, func(ctx context.Context, req spi.Request) (spi.Outcome, error) {
		for i := range 4000 {
			if !req.Log(spi.LevelInfo, spi.StreamStdout, fmt.Sprintf("line %04d", i)) {
				break
			}
		}
		return okOutcome(`1`), nil
	}, &Options{MaxLogLines: 10})
	rec, err := f.e.Run(context.Background(), Call{Script: f.addr})
	require.NoError(t, err)
	require.Len(t, rec.Logs, 10)
	assert.Equal(t, &record.LogsCut{Lines: 3990, Bytes: 3990 * int64(len("line 0000"))}, rec.LogsCut)
}

func TestLogsBoundedByBytes(t *testing.T) {
	f := newFixture(t, logThen(okOutcome(`1`), "12345", "67890", "x", "y"), &Options{MaxLogBytes: 10})
	rec, err := f.e.Run(context.Background(), Call{Script: f.addr})
	require.NoError(t, err)
	require.Len(t, rec.Logs, 2)
	assert.Equal(t, int64(10), rec.Stats.LogBytes)
	// "x" would fit in no room left: the first line that does not fit ends
	// the log, and every later one is dropped, so the order is never broken.
	assert.Equal(t, &record.LogsCut{Lines: 2, Bytes: 2}, rec.LogsCut)
}

// An oversized line is cut with the marker, control characters and lone
// surrogates become U+FFFD, and a gigabyte-sized line costs no more than
// the bound.
func TestLogLineText(t *testing.T) {
	long := strings.Repeat("é", 3*record.MaxLogLineUnits)
	surrogate := "a\xed\xa0\x80b" // WTF-8 for a lone U+D800
	f := newFixture(t, logThen(okOutcome(`1`), long, "bell\x07 esc\x1b tab\tnl\n", surrogate, "\xff"), nil)
	rec, err := f.e.Run(context.Background(), Call{Script: f.addr})
	require.NoError(t, err)
	require.Len(t, rec.Logs, 4)
	cut := rec.Logs[0].Text
	assert.True(t, strings.HasSuffix(cut, truncationMarker))
	assert.Equal(t, record.MaxLogLineUnits, len(utf16.Encode([]rune(strings.TrimSuffix(cut, truncationMarker)))))
	assert.Equal(t, "bell\uFFFD esc\uFFFD tab\tnl\n", rec.Logs[1].Text)
	assert.Equal(t, "a\uFFFDb", rec.Logs[2].Text)
	assert.Equal(t, "\uFFFD", rec.Logs[3].Text)
}

// A line far past spi.MaxLogLineBytes is cut before it is scanned.
func TestLogLineHuge(t *testing.T) {
	huge := strings.Repeat("x", 64<<20)
	b := &logBuffer{maxBytes: DefaultMaxLogBytes, maxLines: DefaultMaxLogLines}
	allocs := testing.AllocsPerRun(3, func() {
		b.lines = nil
		b.bytes = 0
		b.Log(spi.LevelInfo, spi.StreamStdout, huge)
	})
	assert.LessOrEqual(t, allocs, 3.0, "a huge line is cut, not copied whole")
	require.Len(t, b.lines, 1)
	assert.Less(t, len(b.lines[0].Text), 2*record.MaxLogLineUnits)
}

// Invalid levels and streams from a broken backend are kept as info on
// stdout, never stored as numbers outside the set.
func TestLogInvalidLevelAndStream(t *testing.T) {
	f := newFixture(t, func(ctx context.Context, req spi.Request) (spi.Outcome, error) {
		req.Log(0, 9, "odd")
		return okOutcome(`1`), nil
	}, nil)
	rec, err := f.e.Run(context.Background(), Call{Script: f.addr})
	require.NoError(t, err)
	require.Len(t, rec.Logs, 1)
	assert.Equal(t, spi.LevelInfo, rec.Logs[0].Level)
	assert.Equal(t, spi.StreamStdout, rec.Logs[0].Stream)
}

// A backend that logs after Run returned (abandoned past its deadline)
// changes nothing in the record.
func TestLogsAfterRunAreDropped(t *testing.T) {
	release := make(chan struct{})
	done := make(chan bool, 1)
	logged := make(chan struct{})
	f := newFixture(t, func(ctx context.Context, req spi.Request) (spi.Outcome, error) {
		req.Log(spi.LevelInfo, spi.StreamStdout, "in time")
		close(logged)
		<-release
		done <- req.Log(spi.LevelInfo, spi.StreamStdout, "too late")
		return okOutcome(`1`), nil
	}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	waitAndCancel := make(chan struct{})
	go func() {
		<-logged // the first line is in before the run is cancelled
		cancel()
		close(waitAndCancel)
	}()
	rec, err := f.e.Run(ctx, Call{Script: f.addr})
	<-waitAndCancel
	require.ErrorIs(t, err, context.Canceled)
	close(release)
	assert.False(t, <-done, "a late line is refused")
	waitReturned(t, f.fb, 1)
	require.Len(t, rec.Logs, 1)
	assert.Nil(t, rec.LogsCut, "late lines are not counted either: the record is final")
}

// Evaluate without observers gives the backend no sink: the engine skips
// its log capture.
func TestEvaluateWithoutRecordHasNoSink(t *testing.T) {
	var sink spi.LogSink
	f := newFixture(t, func(_ context.Context, req spi.Request) (spi.Outcome, error) {
		sink = req.Logs
		return okOutcome(`1`), nil
	}, nil)
	_, err := f.call(context.Background(), nil)
	require.NoError(t, err)
	assert.Nil(t, sink)
	_, err = f.e.Run(context.Background(), Call{Script: f.addr})
	require.NoError(t, err)
	assert.NotNil(t, sink)
}
