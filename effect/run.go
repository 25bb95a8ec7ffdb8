package effect

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/sandbank/sandbank/internal/canon"
	"github.com/sandbank/sandbank/spi"
	"go.opentelemetry.io/otel/trace"
)

// Run runs a call exactly as [Effect.Evaluate] does (same order, same
// bounds, same value, same error) and returns the run's [Record] beside the
// error.
//
// The record is present (non-nil) whenever the run produced a value or a
// typed failure, and whenever the run reached the backend, whatever the
// backend then did: for a typed failure, record.Failure is the error Run
// returns; for an untyped error or the caller's cancellation past that
// point, record.Error holds its text and record.Logs what the script
// logged until then. It is nil for an invalid call, and for an
// infrastructure error or a cancellation before the backend was called
// (a script store that failed, ErrOverloaded).
//
// Every backend is handed the run's log sink; one that declares
// spi.Capabilities.Logs delivers every line the script logs (the
// conformance kit proves it), others may deliver some or none. The lines
// of a failed run are kept too.
// Lines the backend writes after Run returned (a backend abandoned past its
// deadline) are dropped. When call.Events is set, the run's events go there
// as they happen (see [Event]).
func (e *Effect) Run(ctx context.Context, call Call) (*Record, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	return e.run(ctx, call)
}

// observed reports whether a call needs the run state even when the caller
// does not want the record: for its events, the trace or the logger.
func (e *Effect) observed(call Call) bool {
	return call.Events != nil || e.rc.tracer != nil || e.rc.logger != nil
}

// run is Run with a non-nil ctx.
func (e *Effect) run(ctx context.Context, call Call) (*Record, error) {
	st := &runState{e: e, script: call.Script, source: call.Source, start: time.Now()}
	if call.Events != nil {
		st.events = newEventQueue(call.Events, e.rc.eventBuffer)
	}
	parent := ctx
	ctx, st.span = e.startSpan(ctx)
	st.ctx = ctx
	value, err := e.evaluate(ctx, call, st)
	// 4. Cancellation wins over everything, on every path: the caller's
	// context, not the span's (which is the same context, carrying a span).
	canceled := parent.Err() != nil
	if canceled {
		value, err = nil, parent.Err()
	}
	rec, serr := st.finish(parent, value, err, canceled)
	if serr != nil {
		err = serr
	}
	e.endSpan(st.span, rec, err)
	e.logRun(parent, rec, err)
	return rec, err
}

// runState collects what one run's record needs. Every method is safe on a
// nil *runState (Evaluate without a record): it does nothing.
type runState struct {
	e      *Effect
	script Address         // the call's Script and Source, for the receipt of a
	source []byte          // run that fails before the script is read
	ctx    context.Context // the run's context, with its span
	start  time.Time
	span   trace.Span // nil: not traced

	limits      spi.Limits
	haveLimits  bool
	input       []byte
	inFiles     []FileRef  // the input files' references (files.go)
	outFiles    []spi.File // the output files of a run that finished
	addr        Address
	scriptBytes int64

	reached      bool // the backend was called
	backendStart time.Time
	backendTime  time.Duration
	engine       spi.Stats

	logs   *logBuffer  // nil until the backend is called, then &logBuf
	logBuf logBuffer   // the run's log sink, in the same allocation
	events *eventQueue // nil: no Call.Events

	hostCalls hostLog  // the run's host calls (hostcall_record.go)
	dur       *Durable // a durable run's (durable.go); nil: not durable
}

// hostCallStats totals a run's host calls (see hostCallBegun).
type hostCallStats struct {
	calls, bytesIn, bytesOut int64
	time                     time.Duration
}

func (st *runState) noteDurable(d *Durable) {
	if st != nil {
		st.dur = d
	}
}

func (st *runState) noteLimits(l spi.Limits) {
	if st != nil {
		st.limits, st.haveLimits = l, true
	}
}

func (st *runState) noteInput(input []byte) {
	if st != nil {
		st.input = input
	}
}

func (st *runState) noteInputFiles(refs []FileRef) {
	if st != nil {
		st.inFiles = refs
	}
}

func (st *runState) noteOutputFiles(files []spi.File) {
	if st != nil {
		st.outFiles = files
	}
}

func (st *runState) noteScript(addr Address, script []byte) {
	if st == nil {
		return
	}
	if addr == "" {
		addr = AddressOf(script)
	}
	st.addr, st.scriptBytes = addr, int64(len(script))
}

// backendBegins hands the request a log sink and sends the started event.
func (st *runState) backendBegins(req *spi.Request) {
	if st == nil {
		return
	}
	st.reached = true
	st.logBuf = logBuffer{maxBytes: st.e.rc.maxLogBytes, maxLines: st.e.rc.maxLogLines, start: st.start, events: st.events}
	st.logs = &st.logBuf
	req.Logs = st.logs
	if st.events != nil {
		r := st.receipt()
		st.events.push(Event{Kind: EventStarted, At: time.Since(st.start), Receipt: &r})
	}
	st.backendStart = time.Now()
}

func (st *runState) backendEnded(out spi.Outcome, err error) {
	if st == nil {
		return
	}
	st.backendTime = time.Since(st.backendStart)
	if err == nil {
		st.engine = sanitizeStats(out.Stats)
	}
}

// sanitizeStats keeps an engine's figures only when they can be true: a
// negative figure is a broken backend's, not a measurement.
func sanitizeStats(s spi.Stats) spi.Stats {
	if s.Startup < 0 {
		s.Startup = 0
	}
	if s.ScriptTime < 0 {
		s.ScriptTime = 0
	}
	if s.MemoryPeakBytes < 0 {
		s.MemoryPeakBytes = 0
	}
	s.CPUUnit = boundTextTo(s.CPUUnit, 32)
	if s.CPUUnits < 0 || s.CPUUnit == "" {
		s.CPUUnit, s.CPUUnits = "", 0
	}
	return s
}

// receipt returns the receipt as known so far (no outcome).
func (st *runState) receipt() Receipt {
	e := st.e
	r := Receipt{
		Format:       ReceiptFormat,
		Script:       st.addr,
		Engine:       e.rc.engine,
		Backend:      e.rc.module,
		SPIVersion:   spi.Version,
		Capabilities: e.caps,
		Limits: ReceiptLimits{
			WallClock:      st.limits.WallClock,
			MemoryBytes:    st.limits.MemoryBytes,
			MaxInputBytes:  e.maxInput,
			MaxOutputBytes: e.maxOutput,
			MaxScriptBytes: e.maxScript,
			MaxLogBytes:    e.rc.maxLogBytes,
			MaxLogLines:    e.rc.maxLogLines,
		},
		Started:    st.start.UTC(),
		InputFiles: st.inFiles,
	}
	if e.caps.Files {
		r.Limits.MaxInputFiles, r.Limits.MaxInputFileBytes = e.maxInFiles, e.maxInFileBytes
		r.Limits.MaxOutFiles, r.Limits.MaxOutFileBytes = st.limits.MaxOutFiles, st.limits.MaxOutFileBytes
	}
	if st.dur != nil && st.dur.Resumes != nil {
		r.Previous, _ = st.dur.Resumes.Digest() // checked in checkResumes
		r.Suspensions = st.dur.suspensions()
	}
	if !st.haveLimits {
		r.Limits.WallClock, r.Limits.MemoryBytes = e.limits.WallClock, e.limits.MemoryBytes
		if e.caps.Files {
			r.Limits.MaxOutFiles, r.Limits.MaxOutFileBytes = e.limits.MaxOutFiles, e.limits.MaxOutFileBytes
		}
	}
	if r.Script == "" {
		switch {
		case st.script != "":
			if a, err := ParseAddress(string(st.script)); err == nil {
				r.Script = a
			}
		case st.source != nil:
			r.Script = AddressOf(st.source)
		}
	}
	if st.input != nil {
		r.InputDigest = inputDigest(st.input)
	}
	return r
}

// inputDigest returns the digest of the canonical form of input, valid
// JSON text, or "" when it cannot be put in canonical form.
func inputDigest(input []byte) string {
	text, err := canon.Canonical(input)
	if err != nil {
		return ""
	}
	return canon.Digest(text)
}

// finish builds the run's record, or returns nil when the run has none
// (see Run), signs its receipt, seals the log and sends the finished
// event. Its error is the signer's, which replaces the run's.
func (st *runState) finish(ctx context.Context, value []byte, err error, canceled bool) (*Record, error) {
	var f *Failure
	if err != nil && !canceled {
		errors.As(err, &f)
	}
	if err != nil && f == nil && !st.reached {
		return nil, nil
	}
	rec := &Record{Value: value, Failure: f, Logs: []LogLine{}}
	if err != nil && f == nil {
		rec.Error = boundText(errorText(err))
	}
	if st.logs != nil {
		lines, bytes, cut := st.logs.seal()
		if lines != nil {
			rec.Logs = lines
		}
		rec.LogsCut = cut
		rec.Stats.LogLines, rec.Stats.LogBytes = int64(len(lines)), bytes
	}
	r := st.receipt()
	r.Outcome, r.LimitKind = outcomeOf(err, f, canceled)
	switch {
	case err == nil:
		r.OutputDigest = canon.Digest(value)
		rec.Files, r.OutputFiles = st.outFiles, refsOf(st.outFiles)
	case f != nil:
		r.OutputDigest, _ = canon.DigestJSON(f)
	}
	r.Duration = time.Since(st.start)
	calls, hs := st.hostCalls.seal(time.Now(), st.start)
	if st.dur != nil {
		d, derr := HostLogDigest(calls) // its arguments and answers are valid JSON: checked when kept
		if derr != nil {
			return nil, foreignError("effect: the durable run's host-call log: ", derr)
		}
		r.HostLog = d
	}
	serr := st.e.rc.signer.sign(ctx, &r)
	rec.Receipt = r
	rec.Stats.Duration = r.Duration
	rec.Stats.BackendTime = st.backendTime
	rec.Stats.InputBytes = int64(len(st.input))
	rec.Stats.ScriptBytes = st.scriptBytes
	rec.Stats.OutputBytes = int64(len(value))
	rec.Stats.Startup = st.engine.Startup
	rec.Stats.ScriptTime = st.engine.ScriptTime
	rec.Stats.MemoryPeakBytes = st.engine.MemoryPeakBytes
	rec.Stats.CPUUnit, rec.Stats.CPUUnits = st.engine.CPUUnit, st.engine.CPUUnits
	rec.HostCalls = calls
	rec.Stats.HostCalls = hs.calls
	rec.Stats.HostCallBytesIn, rec.Stats.HostCallBytesOut = hs.bytesIn, hs.bytesOut
	rec.Stats.HostCallTime = hs.time
	if st.events != nil {
		rec.EventsDropped = st.events.droppedCount()
		st.events.push(Event{Kind: EventFinished, At: r.Duration, Record: rec})
	}
	return rec, serr
}

// logRun writes the effect's own diagnostic about a run to the Logger.
func (e *Effect) logRun(ctx context.Context, rec *Record, err error) {
	l := e.rc.logger
	if l == nil {
		return
	}
	if rec == nil {
		if !errors.Is(err, ErrInvalidCall) {
			l.LogAttrs(ctx, slog.LevelWarn, "effect: run failed before the backend", slog.String("engine", e.rc.engine),
				slog.String("error", boundText(errorText(err))))
		}
		return
	}
	level := slog.LevelDebug
	if rec.Receipt.Outcome == OutcomeInfrastructure {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{
		slog.String("engine", e.rc.engine),
		slog.String("script", string(rec.Receipt.Script)),
		slog.String("outcome", rec.Receipt.Outcome),
		slog.Duration("duration", rec.Stats.Duration),
		slog.Duration("backend", rec.Stats.BackendTime),
	}
	if rec.Receipt.LimitKind != "" {
		attrs = append(attrs, slog.String("limitKind", rec.Receipt.LimitKind))
	}
	if rec.Error != "" {
		attrs = append(attrs, slog.String("error", rec.Error))
	}
	if rec.LogsCut != nil {
		attrs = append(attrs, slog.Int64("logLinesDropped", rec.LogsCut.Lines))
	}
	if rec.EventsDropped > 0 {
		attrs = append(attrs, slog.Int64("eventsDropped", rec.EventsDropped))
	}
	l.LogAttrs(ctx, level, "effect: run", attrs...)
}
