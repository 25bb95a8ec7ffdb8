package effect

import (
	"fmt"
	"sync"
	"time"

	"github.com/sandbank/sandbank/record"
)

// EventKind says what an Event reports. The zero value is invalid; values
// are never renumbered.
type EventKind int

// The event kinds, in the order a run produces them: one EventStarted,
// then EventLog and host-call events as they happen, then one
// EventFinished, always last.
const (
	// EventStarted: the run reached the backend (Event.Receipt has the
	// script, input digest, engine and limits; no outcome yet).
	EventStarted EventKind = iota + 1
	// EventLog: the script logged a line (Event.Log), as the record keeps
	// it. Lines the full log dropped have no event.
	EventLog
	// EventHostCallBegun: the script called a host function
	// (Event.HostCall: its name and the bytes it sent).
	EventHostCallBegun
	// EventHostCallEnded: a host function returned (Event.HostCall: the
	// bytes it returned, its duration, its error text).
	EventHostCallEnded
	// EventFinished: the run is over (Event.Record, the same record Run
	// returns, or the record Evaluate did not return).
	EventFinished
)

var eventKindNames = [...]string{
	EventStarted:       "started",
	EventLog:           "log",
	EventHostCallBegun: "hostCallBegun",
	EventHostCallEnded: "hostCallEnded",
	EventFinished:      "finished",
}

// Valid reports whether k is one of the defined kinds.
func (k EventKind) Valid() bool { return k >= EventStarted && k <= EventFinished }

// String returns the kind's name, such as "log".
func (k EventKind) String() string {
	if !k.Valid() {
		return fmt.Sprintf("EventKind(%d)", int(k))
	}
	return eventKindNames[k]
}

// MarshalText implements encoding.TextMarshaler.
func (k EventKind) MarshalText() ([]byte, error) {
	if !k.Valid() {
		return nil, fmt.Errorf("effect: invalid event kind %d", int(k))
	}
	return []byte(k.String()), nil
}

// Event is one thing that happened during a run, as Call.Events receives
// it.
//
// # Delivery
//
// Events are delivered in order, one at a time, on a goroutine of the
// run's own, never on the engine's: a sink that is slow, or never returns,
// does not slow the run or change its result. Up to Options.EventBuffer
// events wait for a slow sink; past that, EventLog and host-call events
// are dropped, and counted in Record.EventsDropped (and in the finished
// event's record). EventStarted and EventFinished are never dropped, and
// EventFinished is always the last event. Run and Evaluate do not wait for
// the sink: the finished event may arrive after they return. A sink that
// panics receives no more events of that run; the run is unaffected.
type Event struct {
	Kind EventKind `json:"kind"`
	// At is when it happened, from the start of the run.
	At time.Duration `json:"atNs"`
	// Log is the line (EventLog).
	Log record.LogLine `json:"log,omitzero"`
	// HostCall describes the host call (EventHostCallBegun, Ended).
	HostCall HostCallEvent `json:"hostCall,omitzero"`
	// Receipt is the run's receipt so far (EventStarted).
	Receipt *record.Receipt `json:"receipt,omitempty"`
	// Record is the run's record (EventFinished). It is shared with the
	// caller of Run: read it, do not change it.
	Record *Record `json:"record,omitempty"`
}

// HostCallEvent describes one host call in an Event.
type HostCallEvent struct {
	// Seq is the call's number in the order the script issued its calls,
	// from 1 (its place in Record.HostCalls, plus one): with several
	// calls in flight, it pairs an ended event with its begun event.
	Seq int `json:"seq,omitempty"`
	// Name is the host function's name.
	Name string `json:"name,omitempty"`
	// BytesIn is what the script sent (begun); BytesOut what the host
	// function returned (ended).
	BytesIn  int64 `json:"bytesIn,omitempty"`
	BytesOut int64 `json:"bytesOut,omitempty"`
	// Duration is the call's (ended).
	Duration time.Duration `json:"durationNs,omitempty"`
	// Error is the call's error text, bounded (ended).
	Error string `json:"error,omitempty"`
}

// eventQueue delivers one run's events to its sink on a goroutine of its
// own. push never blocks: it drops (and counts) an event past the buffer,
// except the first and the last, which always get a slot.
type eventQueue struct {
	sink func(Event)
	max  int

	mu      sync.Mutex
	queue   []Event
	dropped int64
	closed  bool // the finished event was pushed
	running bool // the delivering goroutine is running
	broken  bool // the sink panicked
}

func newEventQueue(sink func(Event), max int) *eventQueue {
	return &eventQueue{sink: sink, max: max}
}

// push queues ev; it reports false when it dropped it.
func (q *eventQueue) push(ev Event) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.broken {
		return false
	}
	final := ev.Kind == EventFinished
	if !final && ev.Kind != EventStarted && len(q.queue) >= q.max {
		q.dropped++
		return false
	}
	q.queue = append(q.queue, ev)
	q.closed = final
	if !q.running {
		q.running = true
		go q.deliver()
	}
	return true
}

// droppedCount returns the events dropped so far.
func (q *eventQueue) droppedCount() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.dropped
}

// deliver hands queued events to the sink until the queue is empty.
func (q *eventQueue) deliver() {
	for {
		q.mu.Lock()
		if len(q.queue) == 0 || q.broken {
			q.running = false
			q.queue = nil
			q.mu.Unlock()
			return
		}
		ev := q.queue[0]
		q.queue[0] = Event{}
		q.queue = q.queue[1:]
		q.mu.Unlock()
		if !q.call(ev) {
			q.mu.Lock()
			q.broken = true
			q.mu.Unlock()
		}
	}
}

// call runs the sink, reporting false when it panicked.
func (q *eventQueue) call(ev Event) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	q.sink(ev)
	return true
}
