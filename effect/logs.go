package effect

import (
	"sync"
	"time"

	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

// logBuffer is the spi.LogSink of one run. It keeps lines in order until
// the first one that does not fit (MaxLogLines, MaxLogBytes), then drops
// that one and every later one, counting each and its bytes (the cut
// marker says how many lines the script wrote past the bound, not just
// that there were some). So it never reports itself full while the run
// goes on: a backend stops handing lines over once Log returns false, and
// the lines it then kept back would go uncounted; counting a line costs
// no more than its length. Each kept line is cut to spi.MaxLogLineBytes,
// then bounded and scrubbed once (boundTextTo, MaxLogLineUnits). After
// seal, every line is dropped without being counted and Log returns
// false: the run's record is final.
type logBuffer struct {
	maxBytes int64
	maxLines int
	start    time.Time
	events   *eventQueue // nil: no Call.Events

	mu     sync.Mutex
	lines  []record.LogLine
	bytes  int64
	cut    record.LogsCut
	full   bool
	sealed bool
}

var _ spi.LogSink = (*logBuffer)(nil)

// Log implements spi.LogSink.
func (b *logBuffer) Log(level spi.LogLevel, stream spi.LogStream, line string) bool {
	if !level.Valid() {
		level = spi.LevelInfo
	}
	if !stream.Valid() {
		stream = spi.StreamStdout
	}
	raw := int64(len(line))
	if len(line) > spi.MaxLogLineBytes {
		line = line[:spi.MaxLogLineBytes]
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sealed {
		return false
	}
	if b.full {
		b.cut.Lines++
		b.cut.Bytes += raw
		return true // dropped, and counted: see logBuffer
	}
	text := boundTextTo(line, record.MaxLogLineUnits)
	if len(b.lines) >= b.maxLines || b.bytes+int64(len(text)) > b.maxBytes {
		b.full = true
		b.cut.Lines++
		b.cut.Bytes += raw
		return true
	}
	l := record.LogLine{Level: level, Stream: stream, Text: text, At: time.Since(b.start)}
	b.lines = append(b.lines, l)
	b.bytes += int64(len(text))
	if b.events != nil {
		// Under the lock, so events keep the lines' order.
		b.events.push(Event{Kind: EventLog, At: l.At, Log: l})
	}
	return true
}

// seal ends the run's log and returns what it kept.
func (b *logBuffer) seal() (lines []record.LogLine, bytes int64, cut *record.LogsCut) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sealed = true
	if b.cut.Lines > 0 {
		c := b.cut
		cut = &c
	}
	return b.lines, b.bytes, cut
}
