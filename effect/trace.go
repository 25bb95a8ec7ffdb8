package effect

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of the effect's spans.
const tracerName = "github.com/sandbank/sandbank/effect"

// startSpan starts the run's span when Options.TracerProvider was given,
// and returns ctx unchanged and a nil span otherwise. The span is named
// "sandbank.run" and carries the engine and language from the start.
func (e *Effect) startSpan(ctx context.Context) (context.Context, trace.Span) {
	if e.rc.tracer == nil {
		return ctx, nil
	}
	return e.rc.tracer.Start(ctx, "sandbank.run", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			attribute.String("sandbank.engine", e.rc.engine),
			attribute.String("sandbank.language", e.caps.Language),
		))
}

// endSpan ends a run's span with its outcome and figures as attributes.
// A run that did not produce a value has status Error, with the outcome
// as its description.
func (e *Effect) endSpan(span trace.Span, rec *Record, err error) {
	if span == nil {
		return
	}
	defer span.End()
	if rec == nil {
		span.SetStatus(codes.Error, "invalid call or failure before the backend")
		return
	}
	r, s := rec.Receipt, rec.Stats
	attrs := []attribute.KeyValue{
		attribute.String("sandbank.outcome", r.Outcome),
		attribute.String("sandbank.script", string(r.Script)),
		attribute.Int64("sandbank.duration_ns", int64(s.Duration)),
		attribute.Int64("sandbank.backend_ns", int64(s.BackendTime)),
		attribute.Int64("sandbank.input_bytes", s.InputBytes),
		attribute.Int64("sandbank.output_bytes", s.OutputBytes),
		attribute.Int64("sandbank.log_lines", s.LogLines),
	}
	if r.LimitKind != "" {
		attrs = append(attrs, attribute.String("sandbank.limit_kind", r.LimitKind))
	}
	if s.Startup > 0 {
		attrs = append(attrs, attribute.Int64("sandbank.startup_ns", int64(s.Startup)))
	}
	if s.ScriptTime > 0 {
		attrs = append(attrs, attribute.Int64("sandbank.script_ns", int64(s.ScriptTime)))
	}
	if s.MemoryPeakBytes > 0 {
		attrs = append(attrs, attribute.Int64("sandbank.memory_peak_bytes", s.MemoryPeakBytes))
	}
	if s.CPUUnit != "" {
		attrs = append(attrs, attribute.String("sandbank.cpu_unit", s.CPUUnit), attribute.Int64("sandbank.cpu_units", s.CPUUnits))
	}
	if s.HostCalls > 0 {
		attrs = append(attrs, attribute.Int64("sandbank.host_calls", s.HostCalls))
	}
	span.SetAttributes(attrs...)
	if err != nil {
		span.SetStatus(codes.Error, r.Outcome)
	}
}
