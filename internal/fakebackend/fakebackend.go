package fakebackend

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/sandbank/sandbank/spi"
)

// Behavior answers one Evaluate call.
type Behavior func(ctx context.Context, req spi.Request) (spi.Outcome, error)

// Capabilities returns the strongest declaration, which the effect accepts
// with default options: JavaScript, no network, hard wall clock, memory and
// CPU enforced, fresh per run.
func Capabilities() spi.Capabilities {
	return spi.Capabilities{
		Language:    "javascript",
		Network:     spi.NetworkNone,
		WallClock:   spi.WallClockHard,
		Memory:      true,
		CPU:         true,
		FreshPerRun: true,
	}
}

// Backend is a scriptable spi.Backend. It is safe for concurrent use.
type Backend struct {
	mu       sync.Mutex
	caps     spi.Capabilities
	capsFunc func() spi.Capabilities
	behave   Behavior
	warmErr  error
	closeErr error

	calls, returned, warms, closes, capReads int
	last                                     spi.Request
	changed                                  chan struct{} // closed and replaced on every count change
}

// New returns a backend declaring caps and answering with b. A nil b
// answers every call with spi.OK("null").
func New(caps spi.Capabilities, b Behavior) *Backend {
	if b == nil {
		b = Return(spi.OK(json.RawMessage("null")))
	}
	return &Backend{caps: caps, behave: b, changed: make(chan struct{})}
}

// Capabilities implements spi.Backend. It counts reads.
func (f *Backend) Capabilities() spi.Capabilities {
	f.mu.Lock()
	f.capReads++
	fn, caps := f.capsFunc, f.caps
	f.mu.Unlock()
	if fn != nil {
		return fn()
	}
	return caps
}

// SetCapabilities changes what later Capabilities calls return.
func (f *Backend) SetCapabilities(c spi.Capabilities) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.caps, f.capsFunc = c, nil
}

// SetCapabilitiesFunc makes Capabilities call fn (which may panic, or
// answer differently each time). A nil fn restores the stored value.
func (f *Backend) SetCapabilitiesFunc(fn func() spi.Capabilities) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.capsFunc = fn
}

// SetBehavior replaces the behaviour for later calls.
func (f *Backend) SetBehavior(b Behavior) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.behave = b
}

// SetWarmError makes Warm return err.
func (f *Backend) SetWarmError(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.warmErr = err
}

// SetCloseError makes Close return err.
func (f *Backend) SetCloseError(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closeErr = err
}

// Evaluate implements spi.Backend: it records the call and runs the
// behaviour. The return is recorded even when the behaviour panics.
func (f *Backend) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	f.mu.Lock()
	f.calls++
	f.last = spi.Request{
		Script: append([]byte(nil), req.Script...),
		Input:  append(json.RawMessage(nil), req.Input...),
		Limits: req.Limits,
	}
	b := f.behave
	f.notifyLocked()
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.returned++
		f.notifyLocked()
		f.mu.Unlock()
	}()
	return b(ctx, req)
}

// Warm implements spi.Warmer.
func (f *Backend) Warm(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.warms++
	f.notifyLocked()
	return f.warmErr
}

// Close implements io.Closer. It counts every call.
func (f *Backend) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closes++
	f.notifyLocked()
	return f.closeErr
}

func (f *Backend) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// Counts is a snapshot of what the backend has seen.
type Counts struct {
	// Calls is how many Evaluate calls started; Returned how many of them
	// returned (or panicked out).
	Calls, Returned int
	// Warms, Closes and CapabilityReads count those calls.
	Warms, Closes, CapabilityReads int
}

// Counts returns a snapshot of the counters.
func (f *Backend) Counts() Counts {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Counts{Calls: f.calls, Returned: f.returned, Warms: f.warms, Closes: f.closes, CapabilityReads: f.capReads}
}

// Calls returns how many Evaluate calls started.
func (f *Backend) Calls() int { return f.Counts().Calls }

// Returned returns how many Evaluate calls have returned.
func (f *Backend) Returned() int { return f.Counts().Returned }

// LastRequest returns a copy of the last request Evaluate received.
func (f *Backend) LastRequest() spi.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

// WaitCalls blocks until at least n Evaluate calls started, or ctx is done.
func (f *Backend) WaitCalls(ctx context.Context, n int) error {
	return f.wait(ctx, func(c Counts) bool { return c.Calls >= n })
}

// WaitReturned blocks until at least n Evaluate calls returned, or ctx is
// done.
func (f *Backend) WaitReturned(ctx context.Context, n int) error {
	return f.wait(ctx, func(c Counts) bool { return c.Returned >= n })
}

func (f *Backend) wait(ctx context.Context, done func(Counts) bool) error {
	for {
		f.mu.Lock()
		c := Counts{Calls: f.calls, Returned: f.returned, Warms: f.warms, Closes: f.closes, CapabilityReads: f.capReads}
		ch := f.changed
		f.mu.Unlock()
		if done(c) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Plain returns a view of f that implements only spi.Backend (no Warmer,
// no io.Closer).
func (f *Backend) Plain() spi.Backend { return plain{f} }

type plain struct{ f *Backend }

func (p plain) Capabilities() spi.Capabilities { return p.f.Capabilities() }
func (p plain) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	return p.f.Evaluate(ctx, req)
}

// Return answers every call with out.
func Return(out spi.Outcome) Behavior {
	return func(context.Context, spi.Request) (spi.Outcome, error) { return out, nil }
}

// Fail answers every call with the Go error err (which may be anything,
// including a typed failure of package effect).
func Fail(err error) Behavior {
	return func(context.Context, spi.Request) (spi.Outcome, error) { return spi.Outcome{}, err }
}

// Panic panics with v on every call.
func Panic(v any) Behavior {
	return func(context.Context, spi.Request) (spi.Outcome, error) { panic(v) }
}

// Echo answers with the request's input as the value.
func Echo() Behavior {
	return func(_ context.Context, req spi.Request) (spi.Outcome, error) {
		return spi.OK(req.Input), nil
	}
}

// BlockUntil ignores ctx and blocks until release is closed, then answers
// with out: a backend that never returns, until the test lets it go.
func BlockUntil(release <-chan struct{}, out spi.Outcome) Behavior {
	return func(context.Context, spi.Request) (spi.Outcome, error) {
		<-release
		return out, nil
	}
}

// LateAfterCancel waits for ctx to be done and then answers with out, as a
// backend that finished anyway.
func LateAfterCancel(out spi.Outcome) Behavior {
	return func(ctx context.Context, _ spi.Request) (spi.Outcome, error) {
		<-ctx.Done()
		return out, nil
	}
}

// PanicAfterCancel waits for ctx to be done and then panics with v.
func PanicAfterCancel(v any) Behavior {
	return func(ctx context.Context, _ spi.Request) (spi.Outcome, error) {
		<-ctx.Done()
		panic(v)
	}
}

// BigText returns a text of n bytes of 'x'.
func BigText(n int) string { return strings.Repeat("x", n) }

// LoneSurrogate is a lone high surrogate (U+D800) encoded the way an engine
// converting UTF-16 to WTF-8 writes it: not valid UTF-8.
const LoneSurrogate = "\xed\xa0\x80"
