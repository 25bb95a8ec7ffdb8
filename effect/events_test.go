package effect

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sandbank/sandbank/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// collector is an events sink that keeps what it receives and says when
// the finished event came.
type collector struct {
	mu       sync.Mutex
	events   []Event
	finished chan struct{}
}

func newCollector() *collector { return &collector{finished: make(chan struct{})} }

func (c *collector) sink(ev Event) {
	c.mu.Lock()
	c.events = append(c.events, ev)
	c.mu.Unlock()
	if ev.Kind == EventFinished {
		close(c.finished)
	}
}

func (c *collector) wait(t *testing.T) []Event {
	t.Helper()
	select {
	case <-c.finished:
	case <-time.After(watchdog):
		t.Fatal("the finished event never came")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.events
}

func kinds(evs []Event) []EventKind {
	var ks []EventKind
	for _, ev := range evs {
		ks = append(ks, ev.Kind)
	}
	return ks
}

func TestEventsInOrder(t *testing.T) {
	f := newFixture(t, logThen(okOutcome(`1`), "a", "b", "c"), nil)
	c := newCollector()
	rec, err := f.e.Run(context.Background(), Call{Script: f.addr, Input: 1, Events: c.sink})
	require.NoError(t, err)
	evs := c.wait(t)
	assert.Equal(t, []EventKind{EventStarted, EventLog, EventLog, EventLog, EventFinished}, kinds(evs))
	assert.Equal(t, f.addr, evs[0].Receipt.Script)
	assert.Equal(t, rec.Receipt.InputDigest, evs[0].Receipt.InputDigest)
	assert.Empty(t, evs[0].Receipt.Outcome, "no outcome yet")
	for i, want := range []string{"a", "b", "c"} {
		assert.Equal(t, want, evs[1+i].Log.Text)
	}
	assert.Same(t, rec, evs[4].Record)
	assert.Zero(t, rec.EventsDropped)

	// Evaluate delivers events too.
	c = newCollector()
	_, err = f.e.Evaluate(context.Background(), Call{Script: f.addr, Events: c.sink})
	require.NoError(t, err)
	assert.Len(t, c.wait(t), 5)
}

// A sink that blocks does not stall the run nor change its result; past
// the buffer, events are dropped and counted; started and finished always
// arrive, finished last.
func TestEventsSlowSinkDrops(t *testing.T) {
	const lines = 10
	var logged []string
	for range lines {
		logged = append(logged, "line")
	}
	f := newFixture(t, logThen(okOutcome(`7`), logged...), &Options{EventBuffer: 2})
	release := make(chan struct{})
	c := newCollector()
	sink := func(ev Event) {
		<-release
		c.sink(ev)
	}
	rec, err := f.e.Run(context.Background(), Call{Script: f.addr, Events: sink})
	// Run returned while the sink is still blocked on its first event.
	require.NoError(t, err)
	assert.Equal(t, `7`, string(rec.Value))
	assert.Len(t, rec.Logs, lines, "the record keeps every line, whatever the sink does")
	close(release)
	evs := c.wait(t)
	ks := kinds(evs)
	assert.Equal(t, EventStarted, ks[0])
	assert.Equal(t, EventFinished, ks[len(ks)-1])
	delivered := int64(len(evs) - 2)
	assert.Equal(t, int64(lines), delivered+rec.EventsDropped, "every log event is delivered or counted")
	assert.GreaterOrEqual(t, rec.EventsDropped, int64(lines-3), "the buffer of 2 (plus one in the sink) bounds the wait")
}

// A sink that panics gets no more events; the run is unaffected.
func TestEventsPanickingSink(t *testing.T) {
	f := newFixture(t, logThen(okOutcome(`1`), "a", "b"), nil)
	calls := make(chan EventKind, 10)
	rec, err := f.e.Run(context.Background(), Call{Script: f.addr, Events: func(ev Event) {
		calls <- ev.Kind
		panic("sink broke")
	}})
	require.NoError(t, err)
	assert.Equal(t, `1`, string(rec.Value))
	assert.Equal(t, EventStarted, <-calls, "the first event, then none: the sink is broken")
	// The delivering goroutine ends: goleak checks it at the end.
}

// A run with no backend call (a typed failure of the input) sends only the
// finished event.
func TestEventsWithoutBackend(t *testing.T) {
	f := newFixture(t, logThen(okOutcome(`1`)), &Options{MaxInputBytes: 1})
	c := newCollector()
	_, err := f.e.Run(context.Background(), Call{Script: f.addr, Input: "long", Events: c.sink})
	requireFailure(t, err, record.CodeInputTooLarge)
	assert.Equal(t, []EventKind{EventFinished}, kinds(c.wait(t)))
}

func TestEventKind(t *testing.T) {
	assert.Equal(t, []int{1, 2, 3, 4, 5}, []int{int(EventStarted), int(EventLog), int(EventHostCallBegun), int(EventHostCallEnded), int(EventFinished)})
	assert.Equal(t, "hostCallEnded", EventHostCallEnded.String())
	assert.Equal(t, "EventKind(0)", EventKind(0).String())
	_, err := EventKind(0).MarshalText()
	assert.Error(t, err)
}

// The host-call hook counts calls in the stats and sends both events.
func TestHostCallHook(t *testing.T) {
	var st *runState
	st.hostCallIssued("x", 1).end(2, nil, record.HostCallOK) // safe without a record
	c := newCollector()
	st = &runState{e: &Effect{}, start: time.Now(), events: newEventQueue(c.sink, 8)}
	st.hostCallIssued("fetch", 10).end(20, nil, record.HostCallOK)
	st.hostCallIssued("fetch", 1).end(0, assert.AnError, record.HostCallError)
	st.finish(context.Background(), []byte(`1`), nil, false)
	evs := c.wait(t)
	assert.Equal(t, []EventKind{EventHostCallBegun, EventHostCallEnded, EventHostCallBegun, EventHostCallEnded, EventFinished}, kinds(evs))
	assert.Equal(t, "fetch", evs[0].HostCall.Name)
	assert.Equal(t, int64(20), evs[1].HostCall.BytesOut)
	assert.NotEmpty(t, evs[3].HostCall.Error)
	assert.Equal(t, int64(2), evs[4].Record.Stats.HostCalls)
	assert.Equal(t, int64(11), evs[4].Record.Stats.HostCallBytesIn)
	assert.Equal(t, int64(20), evs[4].Record.Stats.HostCallBytesOut)
}
