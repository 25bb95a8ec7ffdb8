package server

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
)

// The kinds of a Problem: what went wrong, in the project's three kinds
// of error (a typed failure is never a Problem: it is a 200 with the run
// record's failure).
const (
	// KindInvalidCall: the caller's request is wrong (400, 404, 413, 415,
	// 422 and 403); the same request fails the same way. Not retryable.
	KindInvalidCall = "invalidCall"
	// KindUnauthorized: no API key, or not a known one (401). Not
	// retryable.
	KindUnauthorized = "unauthorized"
	// KindQuota: the tenant's rate limit or concurrent-run cap (429).
	// Retryable after Retry-After.
	KindQuota = "quota"
	// KindOverloaded: the server's run queue is full or the wait in it ran
	// out (503). Retryable after Retry-After.
	KindOverloaded = "overloaded"
	// KindInfrastructure: the engine or the server failed, or the server
	// is shutting down (503). Retryable.
	KindInfrastructure = "infrastructure"
)

// Problem is the body of every error response: RFC 9457 problem details
// (application/problem+json) with two members of Sandbank's own, kind and
// retryable. Its members are a superset of huma's own error model, so the
// errors huma writes itself (a body that does not parse or validate, one
// too large) are Problems too, without kind: their status tells.
type Problem struct {
	Type     string              `json:"type,omitempty" doc:"A URI reference naming the problem type; about:blank when absent."`
	Title    string              `json:"title,omitempty" doc:"The HTTP status text."`
	Status   int                 `json:"status,omitempty" doc:"The HTTP status code."`
	Detail   string              `json:"detail,omitempty" doc:"What went wrong, in fixed wording; never the script or its input."`
	Instance string              `json:"instance,omitempty"`
	Errors   []*huma.ErrorDetail `json:"errors,omitempty" doc:"Each invalid part of the request."`
	Kind     string              `json:"kind,omitempty" enum:"invalidCall,unauthorized,quota,overloaded,infrastructure" doc:"Sandbank's kind of error."`
	// Retryable is true exactly when the same request may succeed later;
	// every Problem carries it, false included.
	Retryable bool `json:"retryable" doc:"True when the same request may succeed later (429 and 503); false for the caller's invalid request."`

	retryAfter time.Duration
}

// Error returns the problem's detail.
func (p *Problem) Error() string { return p.Detail }

// GetStatus returns the problem's HTTP status (huma.StatusError).
func (p *Problem) GetStatus() int { return p.Status }

// ContentType makes the problem application/problem+json
// (huma.ContentTypeFilter).
func (p *Problem) ContentType(ct string) string {
	if ct == "application/json" {
		return "application/problem+json"
	}
	return ct
}

// GetHeaders returns Retry-After for a retryable problem
// (huma.HeadersError).
func (p *Problem) GetHeaders() http.Header {
	h := http.Header{}
	if p.Retryable {
		h.Set("Retry-After", strconv.Itoa(retryAfterSeconds(p.retryAfter)))
	}
	return h
}

// retryAfterSeconds rounds d up to whole seconds, at least one.
func retryAfterSeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	return max(1, s)
}

func problem(status int, kind, detail string) *Problem {
	return &Problem{Status: status, Title: http.StatusText(status), Kind: kind, Detail: detail,
		Retryable: status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable}
}

func invalidCall(status int, detail string) *Problem { return problem(status, KindInvalidCall, detail) }

func quota(detail string, after time.Duration) *Problem {
	p := problem(http.StatusTooManyRequests, KindQuota, detail)
	p.retryAfter = after
	return p
}

func unavailable(kind, detail string, after time.Duration) *Problem {
	p := problem(http.StatusServiceUnavailable, kind, detail)
	p.retryAfter = after
	return p
}

// write writes p outside huma (the middleware's refusals).
func (p *Problem) write(w http.ResponseWriter) {
	for k, v := range p.GetHeaders() {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// runAnswer is the HTTP door's answer to a run's error of one kind: a
// Problem's status, kind and Retry-After, the detail's wording (followed
// by the error's own bounded text when withErr) and the outcome the
// metrics count. A status of 200 answers with the run's record.
type runAnswer struct {
	status     int
	kind       string
	retryAfter time.Duration
	detail     string
	withErr    bool
	outcome    string
}

// runAnswers is the HTTP door's table from the effect's kind of a run's
// error to its answer (a test proves it covers effect.Kinds()).
var runAnswers = map[effect.Kind]runAnswer{
	// The script's typed failure is a 200 with the run record's failure.
	effect.KindFailure:     {status: http.StatusOK},
	effect.KindInvalidCall: {status: http.StatusBadRequest, kind: KindInvalidCall, withErr: true, outcome: KindInvalidCall},
	// The engines are closed, or the drain deadline cut the run: the
	// server is shutting down, and another may serve the same request.
	effect.KindClosed: {status: http.StatusServiceUnavailable, kind: KindInfrastructure, retryAfter: time.Second,
		detail: "server: shutting down: the run was cancelled", outcome: record.OutcomeCanceled},
	effect.KindCanceled: {status: http.StatusServiceUnavailable, kind: KindInfrastructure, retryAfter: time.Second,
		detail: "server: the run failed: ", withErr: true, outcome: record.OutcomeCanceled},
	effect.KindDeadlineExceeded: {status: http.StatusServiceUnavailable, kind: KindInfrastructure, retryAfter: time.Second,
		detail: "server: the run failed: ", withErr: true, outcome: record.OutcomeInfrastructure},
	effect.KindOverloaded: {status: http.StatusServiceUnavailable, kind: KindOverloaded, retryAfter: 5 * time.Second,
		detail: "server: overloaded: the engine has too many abandoned runs", outcome: record.OutcomeInfrastructure},
	effect.KindInfrastructure: {status: http.StatusServiceUnavailable, kind: KindInfrastructure, retryAfter: time.Second,
		detail: "server: the run failed: ", withErr: true, outcome: record.OutcomeInfrastructure},
	// The tenant's runs in flight are at its cap (tenant.Tenant.Acquire):
	// the run did not start.
	effect.KindQuota: {status: http.StatusTooManyRequests, kind: KindQuota, retryAfter: time.Second,
		detail: "server: the tenant's concurrent runs are at their cap", outcome: record.OutcomeInfrastructure},
}

// runAnswerOf returns the answer to a run's error of kind k; a kind
// outside the table is infrastructure.
func runAnswerOf(k effect.Kind) runAnswer {
	if a, ok := runAnswers[k]; ok {
		return a
	}
	return runAnswers[effect.KindInfrastructure]
}

// problem returns the Problem of a, for err.
func (a runAnswer) problem(err error) *Problem {
	detail := a.detail
	if a.withErr {
		detail += effect.Excerpt(err.Error())
	}
	p := problem(a.status, a.kind, detail)
	p.retryAfter = a.retryAfter
	return p
}
