package effect

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// hostCallBegun is the run record's hook for host calls: the effect's
// host-call broker calls it when a script calls a host function, with the
// function's name and the bytes the script sent, and calls the function it
// returns when the host function returned, with the bytes returned and its
// error. It counts the call in the record's stats, sends the begun and
// ended events, and makes the call a child span of the run's span. Safe on
// a nil *runState (a run without a record) and for concurrent use is NOT
// promised: the broker calls it from the engine's goroutine, one call at a
// time.
func (st *runState) hostCallBegun(name string, bytesIn int64) (ended func(bytesOut int64, err error)) {
	if st == nil {
		return func(int64, error) {}
	}
	name = boundText(name)
	begun := time.Now()
	if st.events != nil {
		st.events.push(Event{Kind: EventHostCallBegun, At: begun.Sub(st.start), HostCall: HostCallEvent{Name: name, BytesIn: bytesIn}})
	}
	var span trace.Span
	if st.span != nil {
		_, span = st.e.rc.tracer.Start(st.ctx, "sandbank.hostcall", trace.WithAttributes(
			attribute.String("sandbank.host_function", name), attribute.Int64("sandbank.bytes_in", bytesIn)))
	}
	return func(bytesOut int64, err error) {
		d := time.Since(begun)
		st.hostCalls.calls++
		st.hostCalls.bytesIn += bytesIn
		st.hostCalls.bytesOut += bytesOut
		st.hostCalls.time += d
		var text string
		if err != nil {
			text = boundText(errorText(err))
		}
		if st.events != nil {
			st.events.push(Event{Kind: EventHostCallEnded, At: time.Since(st.start),
				HostCall: HostCallEvent{Name: name, BytesOut: bytesOut, Duration: d, Error: text}})
		}
		if span != nil {
			span.SetAttributes(attribute.Int64("sandbank.bytes_out", bytesOut))
			if err != nil {
				span.SetStatus(codes.Error, text)
			}
			span.End()
		}
	}
}
