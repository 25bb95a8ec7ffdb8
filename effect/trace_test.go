package effect

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

func spanAttrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestTraceSpanPerRun(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer func() { require.NoError(t, tp.Shutdown(context.Background())) }()

	var sawSpan bool
	f := newFixture(t, func(ctx context.Context, req spi.Request) (spi.Outcome, error) {
		// The backend's context carries the run's span.
		sawSpan = len(sr.Started()) == 1
		out := okOutcome(`1`)
		out.Stats = spi.Stats{Startup: 5, MemoryPeakBytes: 65536, CPUUnit: "steps", CPUUnits: 42}
		return out, nil
	}, &Options{Engine: "fake", TracerProvider: tp})
	_, err := f.e.Evaluate(context.Background(), Call{Script: f.addr})
	require.NoError(t, err)
	assert.True(t, sawSpan)

	f.fb.SetBehavior(logThen(spi.Limited(spi.LimitWallClock)))
	_, err = f.e.Evaluate(context.Background(), Call{Script: f.addr})
	requireFailure(t, err, record.CodeLimitExceeded)

	spans := sr.Ended()
	require.Len(t, spans, 2)
	ok, limited := spans[0], spans[1]
	assert.Equal(t, "sandbank.run", ok.Name())
	a := spanAttrs(ok)
	assert.Equal(t, "fake", a["sandbank.engine"].AsString())
	assert.Equal(t, "ok", a["sandbank.outcome"].AsString())
	assert.Equal(t, int64(65536), a["sandbank.memory_peak_bytes"].AsInt64())
	assert.Equal(t, int64(42), a["sandbank.cpu_units"].AsInt64())
	assert.Equal(t, int64(5), a["sandbank.startup_ns"].AsInt64())
	assert.Positive(t, a["sandbank.duration_ns"].AsInt64())
	assert.Equal(t, codes.Unset, ok.Status().Code)

	b := spanAttrs(limited)
	assert.Equal(t, "limitExceeded", b["sandbank.outcome"].AsString())
	assert.Equal(t, "wallClock", b["sandbank.limit_kind"].AsString())
	assert.Equal(t, codes.Error, limited.Status().Code)
}

// Host calls are child spans of the run's span.
func TestTraceHostCallChildSpan(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer func() { require.NoError(t, tp.Shutdown(context.Background())) }()
	e := &Effect{}
	e.rc.tracer = tp.Tracer(tracerName)
	st := &runState{e: e}
	st.ctx, st.span = e.startSpan(context.Background())
	st.hostCallIssued("lookup", 3).end(4, nil, record.HostCallOK)
	st.span.End()
	spans := sr.Ended()
	require.Len(t, spans, 2)
	assert.Equal(t, "sandbank.hostcall", spans[0].Name())
	assert.Equal(t, spans[1].SpanContext().SpanID(), spans[0].Parent().SpanID())
	assert.Equal(t, "lookup", spanAttrs(spans[0])["sandbank.host_function"].AsString())
}

// Without a TracerProvider nothing is traced: the global provider is
// never read.
func TestTraceOffByDefault(t *testing.T) {
	f := newFixture(t, logThen(okOutcome(`1`)), nil)
	assert.Nil(t, f.e.rc.tracer)
	ctx, span := f.e.startSpan(context.Background())
	assert.Nil(t, span)
	assert.Equal(t, context.Background(), ctx)
}

func TestLoggerDiagnostics(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f := newFixture(t, logThen(spi.Infrastructure("down"), "script line"), &Options{Engine: "fake", Logger: logger})
	_, err := f.e.Evaluate(context.Background(), Call{Script: f.addr})
	requireUntyped(t, err)
	out := buf.String()
	assert.Contains(t, out, "level=WARN")
	assert.Contains(t, out, "outcome=infrastructure")
	assert.Contains(t, out, "engine=fake")
	assert.NotContains(t, out, "script line", "the script's logs are not the effect's diagnostics")

	buf.Reset()
	f.fb.SetBehavior(logThen(okOutcome(`1`)))
	_, err = f.e.Evaluate(context.Background(), Call{Script: f.addr})
	require.NoError(t, err)
	assert.True(t, strings.Contains(buf.String(), "level=DEBUG") && strings.Contains(buf.String(), "outcome=ok"), buf.String())
}
