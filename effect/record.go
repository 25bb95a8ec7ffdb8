package effect

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
	"strings"

	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
	"go.opentelemetry.io/otel/trace"
)

// Record is everything known about one run: its value or failure, what the
// script logged, what the run cost, and a receipt that ties the result to
// the script, the input, the engine and the limits that produced it.
//
// [Effect.Run] returns one for every run that produced a value or a typed
// failure, and for every run that reached the backend, whatever the
// backend then did. A Record is plain data: it encodes to JSON with
// encoding/json and decodes back to an equal Record, so it can be stored
// and later checked with receipt.Verify. Fields are only ever added.
type Record struct {
	// Value is the result as canonical JSON text, when the run succeeded.
	Value json.RawMessage `json:"value,omitempty"`
	// Files are the output files the script wrote, when the run
	// succeeded, in name order (see docs/design.md, "Files"); each file's
	// digest is in the receipt (Receipt.OutputFiles).
	Files []spi.File `json:"files,omitempty"`
	// Failure is the typed failure, when the script failed (the same
	// value Run returns as its error).
	Failure *Failure `json:"failure,omitempty"`
	// Error is the text of an untyped (infrastructure) error or of the
	// caller's context error, bounded and storable; empty otherwise.
	Error string `json:"error,omitempty"`
	// Logs are the lines the script logged, in order, each bounded and
	// storable, at most Options.MaxLogLines lines and MaxLogBytes bytes of
	// text. Empty (never null in JSON) when the script logged nothing or
	// the backend does not declare Capabilities.Logs.
	Logs []record.LogLine `json:"logs"`
	// LogsCut is the cut marker: present when lines were dropped because
	// the log was full. Every line from the first one that did not fit is
	// dropped.
	LogsCut *record.LogsCut `json:"logsCut,omitempty"`
	// HostCalls lists the run's host calls in the order the script issued
	// them, each with its start, duration and outcome (see HostCall);
	// empty when it made none.
	HostCalls []record.HostCall `json:"hostCalls,omitempty"`
	// Stats are the run's figures.
	Stats record.Stats `json:"stats"`
	// Receipt is the run's receipt.
	Receipt record.Receipt `json:"receipt"`
	// EventsDropped counts the events of this run that Call.Events did not
	// receive because its buffer was full (a slow sink).
	EventsDropped int64 `json:"eventsDropped,omitempty"`
}

// DefaultMaxLogBytes is the default bound on the log text a record keeps,
// 256 KiB.
const DefaultMaxLogBytes int64 = 256 << 10

// DefaultMaxLogLines is the default bound on the lines a record keeps.
const DefaultMaxLogLines = 1000

// defaultEventBuffer is the default number of events of one run that may
// wait for a slow Call.Events sink.
const defaultEventBuffer = 256

// recordConfig is what the run record needs from the options, fixed in
// New.
type recordConfig struct {
	engine      string // as receipts name it
	module      string // the backend's module "path@version", or ""
	maxLogBytes int64
	maxLogLines int
	eventBuffer int
	logger      *slog.Logger
	tracer      trace.Tracer // nil: no tracing
	signer      signerConfig // sign.go
}

func (rc *recordConfig) init(o *Options, backend spi.Backend) error {
	switch {
	case o.MaxLogBytes < 0:
		return invalid(ErrInvalidLimits, "effect: options: negative MaxLogBytes")
	case o.MaxLogLines < 0:
		return invalid(ErrInvalidLimits, "effect: options: negative MaxLogLines")
	case o.EventBuffer < 0:
		return invalid(ErrInvalidLimits, "effect: options: negative EventBuffer")
	}
	rc.maxLogBytes, rc.maxLogLines, rc.eventBuffer = o.MaxLogBytes, o.MaxLogLines, o.EventBuffer
	if rc.maxLogBytes == 0 {
		rc.maxLogBytes = DefaultMaxLogBytes
	}
	if rc.maxLogLines == 0 {
		rc.maxLogLines = DefaultMaxLogLines
	}
	if rc.eventBuffer == 0 {
		rc.eventBuffer = defaultEventBuffer
	}
	t := reflect.TypeOf(backend)
	rc.engine = boundText(o.Engine)
	if rc.engine == "" {
		rc.engine = t.String()
	}
	rc.module = moduleOf(t)
	if err := rc.signer.init(o.Signer); err != nil {
		return err
	}
	rc.logger = o.Logger
	if o.TracerProvider != nil {
		rc.tracer = o.TracerProvider.Tracer(tracerName)
	}
	return nil
}

// moduleOf returns "path@version" of the module that holds t's package,
// from the program's build information, or "" when it is not known.
func moduleOf(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	pkg := t.PkgPath()
	info, ok := debug.ReadBuildInfo()
	if pkg == "" || !ok {
		return ""
	}
	best := ""
	version := ""
	consider := func(m *debug.Module) {
		if m == nil {
			return
		}
		if m.Replace != nil {
			m = &debug.Module{Path: m.Path, Version: m.Replace.Version}
		}
		if (pkg == m.Path || strings.HasPrefix(pkg, m.Path+"/")) && len(m.Path) > len(best) {
			best, version = m.Path, m.Version
		}
	}
	consider(&info.Main)
	for _, m := range info.Deps {
		consider(m)
	}
	if best == "" {
		return ""
	}
	if version == "" {
		version = "(devel)"
	}
	return fmt.Sprintf("%s@%s", best, version)
}
