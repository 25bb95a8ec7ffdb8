package server

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/pool"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/tenant"
)

// RunLimits are a run's limits; zero fields mean the tenant's ceiling.
type RunLimits struct {
	WallClockMs int64 `json:"wallClockMs,omitempty" minimum:"0" doc:"The wall-clock limit in milliseconds; 0: the tenant's ceiling."`
	MemoryBytes int64 `json:"memoryBytes,omitempty" minimum:"0" doc:"The memory limit in bytes; 0: the tenant's ceiling."`
}

// RunRequest is the body of POST /v1/runs.
type RunRequest struct {
	Language     string          `json:"language,omitempty" doc:"The script's language; runs its default engine. One of language and engine is required."`
	Engine       string          `json:"engine,omitempty" doc:"The engine (see GET /v1/engines)."`
	Source       *string         `json:"source,omitempty" doc:"The script's text. Exactly one of source, sourceBase64 and script."`
	SourceBase64 []byte          `json:"sourceBase64,omitempty" doc:"The script's bytes in base64 (a wasm module)."`
	Script       string          `json:"script,omitempty" pattern:"^sha256:[0-9a-f]{64}$" doc:"The content address of a script stored with POST /v1/scripts by the same tenant."`
	Input        json.RawMessage `json:"input,omitempty" doc:"The script's input, any JSON value; absent: null."`
	Limits       *RunLimits      `json:"limits,omitempty"`
	Shape        json.RawMessage `json:"shape,omitempty" doc:"A JSON Schema the result must satisfy."`
	Suspend      []string        `json:"suspend,omitempty" maxItems:"64" doc:"Host functions the script may call (host.NAME(args)) that suspend the run: it ends with the typed failure suspended, kept with what it waits for (waiting) until POST /v1/runs/{run}/resume answers the call. Needs an engine that declares deterministic."`
	Files        []spi.File      `json:"files,omitempty" doc:"The run's input files, each {name, data} with data in base64 (see docs/design.md, Files). A name must be 1 to 128 letters, digits, '.', '_' or '-', beginning with a letter or a digit, and unique; their count and bytes are bounded by the server. The record's files are the output files the script wrote, in the same form."`
}

// ScriptRequest is the body of POST /v1/scripts.
type ScriptRequest struct {
	Source       *string `json:"source,omitempty" doc:"The script's text. Exactly one of source and sourceBase64."`
	SourceBase64 []byte  `json:"sourceBase64,omitempty" doc:"The script's bytes in base64 (a wasm module)."`
}

// ScriptStored is the response of POST /v1/scripts.
type ScriptStored struct {
	Script record.Address `json:"script" doc:"The script's content address; storing the same bytes again returns it again."`
	Bytes  int64          `json:"bytes"`
}

// EngineInfo describes one engine of GET /v1/engines.
type EngineInfo struct {
	Engine      string           `json:"engine"`
	Language    string           `json:"language"`
	Description string           `json:"description,omitempty"`
	Default     bool             `json:"default" doc:"The default engine of its language."`
	Declared    spi.Capabilities `json:"declared" doc:"The capabilities the engine declares."`
	Verified    Verification     `json:"verified" doc:"What the conformance kit proved of the declaration on this server."`
}

// EngineList is the response of GET /v1/engines.
type EngineList struct {
	Engines []EngineInfo `json:"engines"`
}

// Health is the response of GET /healthz.
type Health struct {
	Status string `json:"status" enum:"ok,draining"`
}

// failureSchema is the JSON form of effect.Failure (its MarshalJSON), for
// the document: the Go type's fields are not its wire form. The values of
// code and kind are the effect's own (TransformSchema), never a copy.
type failureSchema struct {
	Code    string `json:"code"`
	Kind    string `json:"kind,omitempty"`
	Name    string `json:"name,omitempty"`
	Message string `json:"message,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Bytes   int64  `json:"bytes,omitempty"`
	Limit   int64  `json:"limit,omitempty"`
	Script  string `json:"script,omitempty"`
}

// TransformSchema lists the effect's failure codes and limit kinds as the
// values of code and kind (huma.SchemaTransformer).
func (failureSchema) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	var codes, kinds []any
	for c := record.CodeInputNotSerializable; c.Valid(); c++ {
		codes = append(codes, c.String())
	}
	for k := record.LimitCPU; k.Valid(); k++ {
		kinds = append(kinds, k.String())
	}
	if p := s.Properties["code"]; p != nil {
		p.Enum = codes
	}
	if p := s.Properties["kind"]; p != nil {
		p.Enum = kinds
	}
	s.PrecomputeMessages()
	return s
}

type runInput struct{ Body RunRequest }
type runOutput struct {
	Run  string `header:"Sandbank-Run" doc:"The run's id: GET /v1/runs/{run}/receipt returns its receipt."`
	Body *RunAnswer
}
type scriptInput struct{ Body ScriptRequest }
type scriptOutput struct{ Body ScriptStored }
type enginesOutput struct{ Body EngineList }
type healthOutput struct {
	Status int
	Body   Health
}

// register declares the API's operations on mux and returns the API.
func (s *Server) register(mux *http.ServeMux) huma.API {
	cfg := huma.DefaultConfig("Sandbank", s.opts.Version)
	cfg.OpenAPIPath = "/v1/openapi"
	cfg.DocsPath = ""
	cfg.SchemasPath = ""
	cfg.CreateHooks = nil // no $schema members, no Link headers
	cfg.Transformers = []huma.Transformer{asProblem}
	cfg.Info.Description = "Runs untrusted scripts behind one set of guarantees. A run's typed failure (the script's own doing) is a 200 whose record holds failure; every other error is an application/problem+json Problem whose status and kind say which of the other two kinds it is: the caller's invalid request (4xx but 429, not retryable) or retryable infrastructure (429 and 503, with Retry-After)."
	cfg.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		"bearer": {Type: "http", Scheme: "bearer", Description: "The tenant's API key (none in development mode)."},
	}
	reg := cfg.Components.Schemas
	reg.RegisterTypeAlias(reflect.TypeFor[effect.Failure](), reflect.TypeFor[failureSchema]())
	api := humago.New(mux, cfg)
	problemSchema := reg.Schema(reflect.TypeFor[Problem](), true, "Problem")
	errs := func(codes ...int) map[string]*huma.Response {
		m := map[string]*huma.Response{}
		for _, c := range codes {
			m[itoa(c)] = &huma.Response{Description: http.StatusText(c),
				Content: map[string]*huma.MediaType{"application/problem+json": {Schema: problemSchema}}}
		}
		return m
	}
	secured := []map[string][]string{{"bearer": {}}}
	body := []int{400, 401, 413, 415, 422, 429, 503}

	huma.Register(api, huma.Operation{
		OperationID: "createRun", Method: http.MethodPost, Path: "/v1/runs",
		Summary:      "Run a script",
		Description:  "Runs a script, inline or by address, and returns its run record: the value, or the typed failure with 200. A run whose script called a host function named in suspend ends suspended (200, failure.code suspended) with waiting: POST /v1/runs/{run}/resume continues it. 404: the address is not in the tenant's store. 403: the tenant may not use the engine.",
		Responses:    errs(append(body, 403, 404)...),
		Security:     secured,
		MaxBodyBytes: s.opts.MaxBodyBytes,
	}, s.run)
	huma.Register(api, huma.Operation{
		OperationID: "storeScript", Method: http.MethodPost, Path: "/v1/scripts",
		Summary:      "Store a script",
		Description:  "Stores a script in the tenant's own store and returns its content address; idempotent.",
		Responses:    errs(body...),
		Security:     secured,
		MaxBodyBytes: s.opts.MaxBodyBytes,
	}, s.storeScript)
	s.registerReceipts(api, errs, secured)
	s.registerDurable(api, errs, secured)
	huma.Register(api, huma.Operation{
		OperationID: "listEngines", Method: http.MethodGet, Path: "/v1/engines",
		Summary:     "List the engines",
		Description: "The engines the tenant may use, with their declared capabilities and what the conformance kit verified on this server (run once per engine, in the background, on the first listing).",
		Responses:   errs(401, 429),
		Security:    secured,
	}, s.listEngines)
	huma.Register(api, huma.Operation{
		OperationID: "health", Method: http.MethodGet, Path: "/healthz",
		Summary:     "Health and readiness",
		Description: "200 while serving; 503 while draining for shutdown.",
		Responses:   map[string]*huma.Response{"503": {Description: "Draining."}},
	}, s.health)
	return api
}

func itoa(n int) string { return strconv.Itoa(n) }

func fmtInt(n int) string { return strconv.Itoa(n) }

func (s *Server) health(ctx context.Context, _ *struct{}) (*healthOutput, error) {
	if s.draining.Load() {
		return &healthOutput{Status: http.StatusServiceUnavailable, Body: Health{Status: "draining"}}, nil
	}
	return &healthOutput{Status: http.StatusOK, Body: Health{Status: "ok"}}, nil
}

func (s *Server) listEngines(ctx context.Context, _ *struct{}) (*enginesOutput, error) {
	t := tenantOf(ctx)
	out := &enginesOutput{Body: EngineList{Engines: []EngineInfo{}}}
	for _, d := range s.pool.Describe(t.Engines...) {
		e, err := s.reg.Lookup(d.Engine)
		if err != nil {
			continue
		}
		out.Body.Engines = append(out.Body.Engines, EngineInfo{
			Engine: d.Engine, Language: d.Language, Description: d.Description,
			Default: d.Default, Declared: d.Capabilities, Verified: s.verifier.get(e),
		})
	}
	return out, nil
}

// source returns the script bytes of a request's source or sourceBase64,
// or nil when it has neither.
func source(text *string, b64 []byte) ([]byte, *Problem) {
	switch {
	case text != nil && b64 != nil:
		return nil, invalidCall(http.StatusBadRequest, "server: source and sourceBase64 cannot both be set")
	case text != nil:
		return []byte(*text), nil
	case b64 != nil:
		return b64, nil
	}
	return nil, nil
}

func (s *Server) storeScript(ctx context.Context, in *scriptInput) (*scriptOutput, error) {
	src, p := source(in.Body.Source, in.Body.SourceBase64)
	if p != nil {
		return nil, p
	}
	if src == nil {
		return nil, invalidCall(http.StatusBadRequest, "server: source or sourceBase64 is required")
	}
	scripts, _, err := s.data.Tenant(tenantOf(ctx).Name)
	if err != nil {
		return nil, unavailable(KindInfrastructure, "server: the tenant's data could not be opened", time.Second)
	}
	addr, err := scripts.Put(src)
	if err != nil {
		if effect.KindOf(err) == effect.KindInvalidCall || errors.Is(err, effect.ErrScriptTooLarge) {
			return nil, invalidCall(http.StatusRequestEntityTooLarge, "server: the script does not fit in the tenant's store")
		}
		return nil, unavailable(KindInfrastructure, "server: storing the script failed", time.Second)
	}
	return &scriptOutput{Body: ScriptStored{Script: addr, Bytes: int64(len(src))}}, nil
}

// refused is the answer to a request the pool refuses (pool.Resolve,
// pool.Clamp): an engine the tenant may not use is 403; every other
// refusal is answered by its kind (runAnswers).
func refused(err error) *Problem {
	if errors.Is(err, pool.ErrNotAllowed) {
		return invalidCall(http.StatusForbidden, "server: the tenant may not use the engine: "+effect.Excerpt(err.Error()))
	}
	return runAnswerOf(effect.KindOf(err)).problem(err)
}

// run answers POST /v1/runs: it resolves the request into an engine and
// a call, admits it (the tenant's cap, then a slot of the server's),
// runs it, and answers with its record or a problem.
func (s *Server) run(ctx context.Context, in *runInput) (*runOutput, error) {
	if s.draining.Load() {
		s.metrics.rejected.WithLabelValues(rejectShutdown).Inc()
		return nil, unavailable(KindInfrastructure, "server: shutting down", time.Second)
	}
	t := tenantOf(ctx)
	acc := accessOf(ctx)
	entry, call, p := s.resolve(ctx, t, acc, &in.Body)
	if p != nil {
		return nil, p
	}
	d := durableOf(&in.Body) // nil unless it names host functions that suspend (durable.go)
	call.Host = d.host()
	release, p := s.admit(ctx, t, acc)
	if p != nil {
		return nil, p
	}
	defer release()
	rec, err := s.execute(ctx, entry, t, call, d, acc)
	return s.answer(ctx, entry, rec, err, d, acc)
}

// resolve reads a run request: its engine (pool.Resolve, within the
// tenant's engines), its script (inline, or from the tenant's store by
// address), its input and shape, and its limits within the tenant's
// ceiling.
func (s *Server) resolve(ctx context.Context, t *tenant.Tenant, acc *access, req *RunRequest) (registry.Entry, effect.Call, *Problem) {
	var call effect.Call
	entry, err := s.pool.Resolve(req.Engine, req.Language, t.Engines...)
	if err != nil {
		return entry, call, refused(err)
	}
	acc.engine = entry.Engine

	call = effect.Call{Input: json.RawMessage("null"), Shape: req.Shape, Files: req.Files}
	if len(req.Input) > 0 {
		call.Input = req.Input
	}
	src, p := source(req.Source, req.SourceBase64)
	if p != nil {
		return entry, call, p
	}
	switch {
	case src != nil && req.Script != "":
		return entry, call, invalidCall(http.StatusBadRequest, "server: source and script cannot both be set")
	case src != nil:
		call.Source = src
	case req.Script != "":
		addr, err := effect.ParseAddress(req.Script)
		if err != nil {
			return entry, call, invalidCall(http.StatusBadRequest, "server: malformed script address")
		}
		scripts, _, err := s.data.Tenant(t.Name)
		if err != nil {
			return entry, call, unavailable(KindInfrastructure, "server: the tenant's data could not be opened", time.Second)
		}
		b, err := scripts.ReadScript(ctx, addr)
		if errors.Is(err, fs.ErrNotExist) {
			return entry, call, invalidCall(http.StatusNotFound, "server: no script "+string(addr)+" in the tenant's store")
		} else if err != nil {
			return entry, call, unavailable(KindInfrastructure, "server: reading the script failed", time.Second)
		}
		call.Script, call.Source = addr, b
	default:
		return entry, call, invalidCall(http.StatusBadRequest, "server: source, sourceBase64 or script is required")
	}

	call.Limits, p = s.limits(t.Limits, req.Limits)
	return entry, call, p
}

// admit holds a run of the tenant's (its cap of concurrent runs) and a
// slot of the server's (waiting in the queue); release frees both.
func (s *Server) admit(ctx context.Context, t *tenant.Tenant, acc *access) (release func(), _ *Problem) {
	releaseTenant, err := t.Acquire()
	if err != nil { // effect.KindQuota: the answer of every door (runAnswers)
		s.metrics.rejected.WithLabelValues(rejectTenantCap).Inc()
		return nil, runAnswerOf(effect.KindOf(err)).problem(err)
	}
	queued := time.Now()
	free, err := s.admission.acquire(ctx)
	acc.queued = time.Since(queued)
	var p *Problem
	switch {
	case errors.Is(err, errQueueFull):
		s.metrics.rejected.WithLabelValues(rejectQueueFull).Inc()
		p = unavailable(KindOverloaded, "server: overloaded: the run queue is full", time.Second)
	case errors.Is(err, errQueueTimeout):
		s.metrics.rejected.WithLabelValues(rejectQueueTimeout).Inc()
		p = unavailable(KindOverloaded, "server: overloaded: no run slot within the queue timeout", time.Second)
	case err != nil:
		p = unavailable(KindInfrastructure, "server: the request was cancelled while queued", time.Second)
	}
	if p != nil {
		releaseTenant()
		return nil, p
	}
	return func() { free(); releaseTenant() }, nil
}

// execute runs call on the engine's effect with the tenant's packages
// (durably when d is not nil), stopped when its caller goes away and when
// Shutdown's drain deadline passes.
func (s *Server) execute(ctx context.Context, entry registry.Entry, t *tenant.Tenant, call effect.Call, d *durableRun, acc *access) (*effect.Record, error) {
	s.metrics.inFlight.WithLabelValues(entry.Engine).Inc()
	defer s.metrics.inFlight.WithLabelValues(entry.Engine).Dec()

	eff, err := s.pool.Effect(entry.Engine, t.Packages...)
	if err != nil {
		return nil, errEngine{err}
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.hard, cancel)
	defer stop()
	start := time.Now()
	rec, err := d.run(runCtx, eff, call)
	acc.runTime = time.Since(start)
	s.metrics.duration.WithLabelValues(entry.Engine).Observe(acc.runTime.Seconds())
	return rec, err
}

// errEngine is an engine the pool could not give: refused by this
// server's options, or failing to start.
type errEngine struct{ err error }

func (e errEngine) Error() string { return e.err.Error() }
func (e errEngine) Unwrap() error { return e.err }

// answer is the response to a run: its record (kept first: an answered
// run's receipt is in the tenant's store, and a suspended run's
// continuation), or the problem its error's kind says.
func (s *Server) answer(ctx context.Context, entry registry.Entry, rec *effect.Record, err error, d *durableRun, acc *access) (*runOutput, error) {
	var ee errEngine
	if errors.As(err, &ee) {
		if effect.KindOf(ee.err) == effect.KindInvalidCall {
			return nil, invalidCall(http.StatusBadRequest, "server: engine "+entry.Engine+" is refused by this server: "+effect.Excerpt(ee.err.Error()))
		}
		return nil, unavailable(KindInfrastructure, "server: engine "+entry.Engine+" could not start", 5*time.Second)
	}
	kind := effect.KindOf(err)
	switch {
	case err == nil && rec != nil, kind == effect.KindFailure && rec != nil:
		acc.outcome = rec.Receipt.Outcome
		s.metrics.runs.WithLabelValues(entry.Engine, acc.outcome).Inc()
		run, p := s.keep(ctx, rec)
		if p != nil {
			return nil, p
		}
		waiting, p := s.park(ctx, run, d)
		if p != nil {
			return nil, p
		}
		acc.run = run
		return &runOutput{Run: run, Body: &RunAnswer{Record: rec, Waiting: waiting}}, nil
	case err == nil:
		// Neither a record nor an error: the effect broke its contract.
		kind, err = effect.KindInfrastructure, errNoRecord
	case kind == effect.KindFailure:
		// A typed failure without its record: the same.
		kind = effect.KindInfrastructure
	case kind != effect.KindInvalidCall && s.hard.Err() != nil:
		// Shutdown's drain deadline cut the run.
		kind = effect.KindClosed
	}
	a := runAnswerOf(kind)
	acc.outcome = a.outcome
	if acc.outcome == record.OutcomeInfrastructure && ctx.Err() != nil {
		acc.outcome = record.OutcomeCanceled
	}
	s.metrics.runs.WithLabelValues(entry.Engine, acc.outcome).Inc()
	return nil, a.problem(err)
}

// errNoRecord is a run that returned neither a record nor an error.
var errNoRecord = errors.New("server: the run produced no record")

// limits resolves a request's limits against the tenant's ceiling, the
// server's lowered by the tenant's own (pool.Lower and pool.Clamp), in
// the API's wire names.
func (s *Server) limits(tenantCeiling spi.Limits, l *RunLimits) (spi.Limits, *Problem) {
	ceiling := pool.Lower(s.pool.Ceiling(), tenantCeiling)
	var asked spi.Limits
	if l != nil {
		asked = spi.Limits{WallClock: millis(l.WallClockMs), MemoryBytes: l.MemoryBytes}
	}
	out, err := pool.Clamp(ceiling, asked)
	var le *pool.LimitError
	switch {
	case err == nil:
		return out, nil
	case !errors.As(err, &le):
		return spi.Limits{}, refused(err)
	case le.Negative():
		return spi.Limits{}, invalidCall(http.StatusBadRequest, "server: negative limits")
	case le.Kind == record.LimitWallClock:
		return spi.Limits{}, invalidCall(http.StatusBadRequest, "server: limits.wallClockMs is above the tenant's ceiling of "+fmtInt(int(ceiling.WallClock/time.Millisecond)))
	}
	return spi.Limits{}, invalidCall(http.StatusBadRequest, "server: limits.memoryBytes is above the tenant's ceiling of "+fmtInt(int(ceiling.MemoryBytes)))
}

// millis is ms milliseconds, saturating at the largest duration.
func millis(ms int64) time.Duration {
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}

// maxProblemErrors bounds the invalid parts a Problem lists (a body with
// many unknown fields would otherwise list them all).
const maxProblemErrors = 8

// asProblem turns the errors huma writes itself (a body that does not
// parse, validate or fit) into Problems: with kind, and without the
// offending values, which are the caller's own input (its script text,
// perhaps) and have no place in an error. What is left of the caller's
// text (the name of an unknown field is in its location) is quoted as an
// excerpt, and at most maxProblemErrors parts are listed.
func asProblem(_ huma.Context, _ string, v any) (any, error) {
	em, ok := v.(*huma.ErrorModel)
	if !ok {
		return v, nil
	}
	p := &Problem{Type: effect.Excerpt(em.Type), Title: em.Title, Status: em.Status, Detail: effect.Excerpt(em.Detail),
		Instance: effect.Excerpt(em.Instance)}
	for _, d := range em.Errors {
		if d != nil && len(p.Errors) < maxProblemErrors {
			p.Errors = append(p.Errors, &huma.ErrorDetail{Message: effect.Excerpt(d.Message), Location: effect.Excerpt(d.Location)})
		}
	}
	switch {
	case p.Status == http.StatusTooManyRequests:
		p.Kind, p.Retryable = KindQuota, true
	case p.Status >= 500:
		p.Kind, p.Retryable = KindInfrastructure, true
	case p.Status == http.StatusUnauthorized:
		p.Kind = KindUnauthorized
	case p.Status >= 400:
		p.Kind = KindInvalidCall
	}
	return p, nil
}
