package effect

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/sandbank/sandbank/record"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// hostLog is a run's record of its host calls. Calls run concurrently, so
// it is safe for concurrent use; it is sealed when the record is
// finished: a call not ended by then is listed canceled, and its late end
// changes nothing.
type hostLog struct {
	mu     sync.Mutex
	sealed bool
	calls  []record.HostCall
}

// hostCallEntry is one call's line in its run's hostLog, and its span.
// Its methods are safe on a nil *hostCallEntry (a run without a record).
type hostCallEntry struct {
	st    *runState
	i     int // index in st.hostCalls.calls
	begun time.Time
	span  trace.Span
}

// hostCallIssued is the run record's hook for host calls: the broker calls
// it when it accepts a call, in the order the script issued them, with the
// function's name and the bytes the script sent. It lists the call, sends
// the begun event and starts the call's child span of the run's span.
func (st *runState) hostCallIssued(name string, bytesIn int64) *hostCallEntry {
	if st == nil {
		return nil
	}
	name = boundText(name)
	now := time.Now()
	l := &st.hostCalls
	l.mu.Lock()
	if l.sealed {
		l.mu.Unlock()
		return nil
	}
	i := len(l.calls)
	l.calls = append(l.calls, record.HostCall{Name: name, Issued: now.Sub(st.start), BytesIn: bytesIn})
	l.mu.Unlock()
	if st.events != nil {
		st.events.push(Event{Kind: EventHostCallBegun, At: now.Sub(st.start), HostCall: HostCallEvent{Seq: i + 1, Name: name, BytesIn: bytesIn}})
	}
	en := &hostCallEntry{st: st, i: i}
	if st.span != nil {
		_, en.span = st.e.rc.tracer.Start(st.ctx, "sandbank.hostcall", trace.WithAttributes(
			attribute.String("sandbank.host_function", name), attribute.Int64("sandbank.bytes_in", bytesIn)))
	}
	return en
}

// keep writes the call's argument and, when it had one, the answer the
// script got into its line: a durable run's log.
func (en *hostCallEntry) keep(args, answer json.RawMessage) {
	if en == nil {
		return
	}
	l := &en.st.hostCalls
	l.mu.Lock()
	if !l.sealed {
		c := &l.calls[en.i]
		if args != nil {
			c.Args = args
		}
		if answer != nil {
			c.Answer = answer
		}
	}
	l.mu.Unlock()
}

// begin marks the start of the host function.
func (en *hostCallEntry) begin() {
	if en == nil {
		return
	}
	en.begun = time.Now()
	l := &en.st.hostCalls
	l.mu.Lock()
	if !l.sealed {
		l.calls[en.i].Start = en.begun.Sub(en.st.start)
	}
	l.mu.Unlock()
}

// end completes the call's line: the bytes returned, the error thrown
// into the script, the outcome; it counts the call in the record's stats
// (at seal) and sends the ended event.
func (en *hostCallEntry) end(bytesOut int64, err error, o record.HostCallOutcome) {
	if en == nil {
		return
	}
	st := en.st
	var d time.Duration
	if !en.begun.IsZero() {
		d = time.Since(en.begun)
	}
	var text string
	if err != nil {
		text = boundText(errorText(err))
	}
	l := &st.hostCalls
	l.mu.Lock()
	sealed := l.sealed
	var name string
	if !sealed {
		c := &l.calls[en.i]
		c.Duration, c.BytesOut, c.Outcome, c.Error = d, bytesOut, o, text
		name = c.Name
	}
	l.mu.Unlock()
	if st.events != nil && !sealed {
		st.events.push(Event{Kind: EventHostCallEnded, At: time.Since(st.start),
			HostCall: HostCallEvent{Seq: en.i + 1, Name: name, BytesOut: bytesOut, Duration: d, Error: text}})
	}
	if en.span != nil {
		en.span.SetAttributes(attribute.Int64("sandbank.bytes_out", bytesOut), attribute.String("sandbank.outcome", o.String()))
		if err != nil {
			en.span.SetStatus(codes.Error, text)
		}
		en.span.End()
	}
}

// seal ends the host-call log as the record is finished: a call not ended
// yet is listed canceled (its duration so far), and nothing changes
// afterwards. It returns the list (nil when the run made no call) and the
// stats.
func (l *hostLog) seal(now time.Time, start time.Time) ([]record.HostCall, hostCallStats) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sealed = true
	for i := range l.calls {
		c := &l.calls[i]
		if c.Outcome != 0 {
			continue
		}
		c.Outcome, c.Error = record.HostCallCanceled, errHostRunEnded.msg
		if c.Start != 0 {
			c.Duration = now.Sub(start) - c.Start
		}
	}
	st := hostCallStats{calls: int64(len(l.calls))}
	for _, c := range l.calls {
		st.bytesIn += c.BytesIn
		st.bytesOut += c.BytesOut
		st.time += c.Duration
	}
	if len(l.calls) == 0 {
		return nil, st
	}
	return l.calls, st
}
