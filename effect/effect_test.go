package effect

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

func TestNewRefusals(t *testing.T) {
	good := fakebackend.Capabilities()
	with := func(mut func(*spi.Capabilities)) spi.Capabilities {
		c := good
		mut(&c)
		return c
	}
	neg := -time.Second
	cases := []struct {
		name    string
		caps    spi.Capabilities
		opts    *Options
		errText string
	}{
		{"empty language", with(func(c *spi.Capabilities) { c.Language = "" }), nil, "empty language"},
		{"zero network", with(func(c *spi.Capabilities) { c.Network = 0 }), nil, "invalid network"},
		{"unknown network", with(func(c *spi.Capabilities) { c.Network = 9 }), &Options{AllowNetwork: true}, "invalid network"},
		{"zero wall clock", with(func(c *spi.Capabilities) { c.WallClock = 0 }), nil, "invalid wall clock"},
		{"open network", with(func(c *spi.Capabilities) { c.Network = spi.NetworkOpen }), nil, "AllowNetwork"},
		{"allowlist network", with(func(c *spi.Capabilities) { c.Network = spi.NetworkAllowlist }), nil, "AllowNetwork"},
		{"reused environment", with(func(c *spi.Capabilities) { c.FreshPerRun = false }), nil, "AllowReusedEnvironment"},
		{"network allowed, reuse not", with(func(c *spi.Capabilities) { c.Network = spi.NetworkOpen; c.FreshPerRun = false }),
			&Options{AllowNetwork: true}, "AllowReusedEnvironment"},
		{"negative wall clock", good, &Options{Limits: spi.Limits{WallClock: -1}}, "negative wall clock"},
		{"negative memory", good, &Options{Limits: spi.Limits{MemoryBytes: -1}}, "negative memory"},
		{"negative max input", good, &Options{MaxInputBytes: -1}, "negative MaxInputBytes"},
		{"negative max output", good, &Options{MaxOutputBytes: -1}, "negative MaxOutputBytes"},
		{"negative max script", good, &Options{MaxScriptBytes: -1}, "negative MaxScriptBytes"},
		{"negative grace", good, &Options{BackendGrace: &neg}, "negative BackendGrace"},
		{"negative max abandoned", good, &Options{MaxAbandoned: -1}, "negative MaxAbandoned"},
		{"negative close timeout", good, &Options{CloseTimeout: -1}, "negative CloseTimeout"},
		{"negative warm timeout", good, &Options{WarmTimeout: -1}, "negative WarmTimeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(newMemoryStore(), fakebackend.New(tc.caps, nil), tc.opts)
			require.Error(t, err)
			assert.Nil(t, e)
			assert.Contains(t, err.Error(), tc.errText)
			assert.Regexp(t, "^effect: ", err.Error())
			switch {
			case strings.Contains(tc.errText, "negative"):
				requireInvalid(t, err, ErrInvalidLimits)
			case strings.Contains(tc.errText, "Allow"):
				requireInvalid(t, err, ErrInvalidCall) // the options refuse this backend
			default:
				// The backend's declaration is broken: not the caller's doing.
				assert.NotErrorIs(t, err, ErrInvalidCall)
				assert.True(t, Retryable(err))
			}
		})
	}
	t.Run("nil reader", func(t *testing.T) {
		_, err := New(nil, fakebackend.New(good, nil), nil)
		assert.EqualError(t, err, "effect: nil script reader")
		requireInvalid(t, err, ErrInvalidCall)
	})
	t.Run("nil backend", func(t *testing.T) {
		_, err := New(newMemoryStore(), nil, nil)
		assert.EqualError(t, err, "effect: nil backend")
		requireInvalid(t, err, ErrInvalidCall)
	})
	t.Run("typed nil backend", func(t *testing.T) {
		var fb *fakebackend.Backend
		_, err := New(newMemoryStore(), fb, nil)
		assert.EqualError(t, err, "effect: backend panicked while reporting its capabilities")
	})
	t.Run("capabilities panic", func(t *testing.T) {
		fb := fakebackend.New(good, nil)
		fb.SetCapabilitiesFunc(func() spi.Capabilities { panic("no") })
		_, err := New(newMemoryStore(), fb, nil)
		assert.Error(t, err)
	})
}

func TestNewAccepts(t *testing.T) {
	zero := time.Duration(0)
	cases := []struct {
		name       string
		caps       spi.Capabilities
		opts       *Options
		idempotent bool
	}{
		{"strongest", fakebackend.Capabilities(), nil, true},
		{"soft clock, no limits", spi.Capabilities{Language: "starlark", Network: spi.NetworkNone, WallClock: spi.WallClockSoft, FreshPerRun: true}, nil, true},
		{"open network allowed", spi.Capabilities{Language: "x", Network: spi.NetworkOpen, WallClock: spi.WallClockHard, FreshPerRun: true},
			&Options{AllowNetwork: true}, false},
		{"allowlist allowed", spi.Capabilities{Language: "x", Network: spi.NetworkAllowlist, WallClock: spi.WallClockHard, FreshPerRun: true},
			&Options{AllowNetwork: true}, false},
		{"reuse allowed", spi.Capabilities{Language: "x", Network: spi.NetworkNone, WallClock: spi.WallClockHard},
			&Options{AllowReusedEnvironment: true}, false},
		{"both allowed", spi.Capabilities{Language: "x", Network: spi.NetworkOpen, WallClock: spi.WallClockHard},
			&Options{AllowNetwork: true, AllowReusedEnvironment: true}, false},
		{"zero grace", fakebackend.Capabilities(), &Options{BackendGrace: &zero}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(newMemoryStore(), fakebackend.New(tc.caps, nil), tc.opts)
			require.NoError(t, err)
			assert.Equal(t, tc.caps, e.Capabilities())
			assert.Equal(t, tc.idempotent, e.Idempotent())
		})
	}
}

func TestCapabilitiesSnapshot(t *testing.T) {
	f := newFixture(t, fakebackend.Echo(), nil)
	before := f.e.Capabilities()
	// The backend now claims something the effect would have refused.
	f.fb.SetCapabilities(spi.Capabilities{Language: "other", Network: spi.NetworkOpen, WallClock: spi.WallClockSoft})
	for range 3 {
		_, err := f.call(context.Background(), 1)
		require.NoError(t, err)
	}
	assert.Equal(t, before, f.e.Capabilities())
	assert.True(t, f.e.Idempotent())
	assert.Equal(t, 1, f.fb.Counts().CapabilityReads, "capabilities are read once, in New")

	// A getter that flips after the first answer changes nothing either.
	fb := fakebackend.New(fakebackend.Capabilities(), nil)
	n := 0
	fb.SetCapabilitiesFunc(func() spi.Capabilities {
		n++
		c := fakebackend.Capabilities()
		if n > 1 {
			c.Network = spi.NetworkOpen
		}
		return c
	})
	e, err := New(newMemoryStore(), fb, nil)
	require.NoError(t, err)
	assert.Equal(t, spi.NetworkNone, e.Capabilities().Network)
	assert.True(t, e.Idempotent())
}

func TestCallLimits(t *testing.T) {
	opts := &Options{Limits: spi.Limits{WallClock: time.Second, MemoryBytes: 1 << 20}}
	cases := []struct {
		name    string
		limits  spi.Limits
		want    spi.Limits
		errText string
	}{
		{"zero takes the effect's", spi.Limits{}, opts.Limits, ""},
		{"tightened", spi.Limits{WallClock: time.Millisecond, MemoryBytes: 1024}, spi.Limits{WallClock: time.Millisecond, MemoryBytes: 1024}, ""},
		{"one field tightened", spi.Limits{MemoryBytes: 1024}, spi.Limits{WallClock: time.Second, MemoryBytes: 1024}, ""},
		{"at the ceiling", opts.Limits, opts.Limits, ""},
		{"wall clock above", spi.Limits{WallClock: time.Second + 1}, spi.Limits{}, "effect: call limits exceed the effect's ceiling"},
		{"memory above", spi.Limits{MemoryBytes: 1<<20 + 1}, spi.Limits{}, "effect: call limits exceed the effect's ceiling"},
		{"negative wall clock", spi.Limits{WallClock: -1}, spi.Limits{}, "effect: call limits must not be negative"},
		{"negative memory", spi.Limits{MemoryBytes: -1}, spi.Limits{}, "effect: call limits must not be negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fakebackend.Echo(), opts)
			_, err := f.e.Evaluate(context.Background(), Call{Script: f.addr, Input: 1, Limits: tc.limits})
			if tc.errText != "" {
				requireInvalid(t, err, ErrInvalidLimits)
				assert.EqualError(t, err, tc.errText)
				f.untouched(t)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, f.fb.LastRequest().Limits)
		})
	}
	t.Run("defaults", func(t *testing.T) {
		f := newFixture(t, fakebackend.Echo(), nil)
		_, err := f.call(context.Background(), 1)
		require.NoError(t, err)
		assert.Equal(t, spi.Limits{WallClock: DefaultWallClock, MemoryBytes: DefaultMemoryBytes}, f.fb.LastRequest().Limits)
	})
}

func TestHugeGraceDoesNotOverflow(t *testing.T) {
	huge := time.Duration(1<<63 - 1)
	f := newFixture(t, fakebackend.Echo(), &Options{BackendGrace: &huge})
	out, err := f.call(context.Background(), 1)
	require.NoError(t, err)
	assert.Equal(t, "1", string(out))
}

func TestClose(t *testing.T) {
	f := newFixture(t, fakebackend.Echo(), nil)
	require.NoError(t, f.e.Close())
	require.NoError(t, f.e.Close(), "a second Close returns the first one's result")
	assert.Equal(t, 1, f.fb.Counts().Closes, "the backend is closed once")

	_, err := f.call(context.Background(), 1)
	requireInvalid(t, err, ErrClosed)
	assert.EqualError(t, err, "effect: closed")
	requireInvalid(t, f.e.Warm(context.Background()), ErrClosed)
	f.untouched(t)

	t.Run("not a closer", func(t *testing.T) {
		fb := fakebackend.New(fakebackend.Capabilities(), nil)
		e, err := New(newMemoryStore(), fb.Plain(), nil)
		require.NoError(t, err)
		require.NoError(t, e.Close())
		assert.Zero(t, fb.Counts().Closes)
		_, err = e.Evaluate(context.Background(), Call{Script: record.AddressOf(testScript)})
		assert.ErrorIs(t, err, ErrClosed)
	})
	t.Run("close error is bounded and untyped", func(t *testing.T) {
		fb := fakebackend.New(fakebackend.Capabilities(), nil)
		fb.SetCloseError(&Failure{Code: record.CodeScriptError, Message: fakebackend.BigText(10000)})
		e, err := New(newMemoryStore(), fb, nil)
		require.NoError(t, err)
		err = e.Close()
		requireUntyped(t, err)
		assert.Contains(t, err.Error(), "effect: closing backend: ")
		assert.Less(t, len(err.Error()), 3*MaxTextUnits)
		assert.Equal(t, err, e.Close())
	})
	t.Run("close while a call is in flight", func(t *testing.T) {
		release := make(chan struct{})
		f := newFixture(t, fakebackend.BlockUntil(release, okOutcome(`"done"`)), nil)
		done := make(chan error, 1)
		go func() {
			_, err := f.call(context.Background(), 1)
			done <- err
		}()
		waitCalls(t, f.fb, 1)
		require.NoError(t, f.e.Close(), "Close does not wait for calls in flight")
		close(release)
		require.NoError(t, <-done)
		waitReturned(t, f.fb, 1)
	})
}

type warmer struct {
	*fakebackend.Backend
	warm func(ctx context.Context) error
}

func (w warmer) Warm(ctx context.Context) error { return w.warm(ctx) }

func TestWarm(t *testing.T) {
	t.Run("warms a warmer", func(t *testing.T) {
		f := newFixture(t, fakebackend.Echo(), nil)
		require.NoError(t, f.e.Warm(context.Background()))
		assert.Equal(t, 1, f.fb.Counts().Warms)
	})
	t.Run("no-op otherwise", func(t *testing.T) {
		fb := fakebackend.New(fakebackend.Capabilities(), nil)
		e, err := New(newMemoryStore(), fb.Plain(), nil)
		require.NoError(t, err)
		require.NoError(t, e.Warm(context.Background()))
		assert.Zero(t, fb.Counts().Warms)
	})
	t.Run("error is untyped", func(t *testing.T) {
		f := newFixture(t, fakebackend.Echo(), nil)
		f.fb.SetWarmError(&Failure{Code: record.CodeLimitExceeded, Kind: record.LimitCPU})
		err := f.e.Warm(context.Background())
		requireUntyped(t, err)
		assert.Contains(t, err.Error(), "effect: backend warm-up failed")
	})
	cases := map[string]func(ctx context.Context) error{
		"panic": func(context.Context) error { panic("warm exploded") },
		"hangs until cancelled, then fails": func(ctx context.Context) error {
			<-ctx.Done()
			return errors.New("interrupted")
		},
	}
	for name, w := range cases {
		t.Run(name, func(t *testing.T) {
			fb := fakebackend.New(fakebackend.Capabilities(), nil)
			e, err := New(newMemoryStore(), warmer{fb, w}, nil)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			err = e.Warm(ctx)
			if name == "panic" {
				requireUntyped(t, err)
				return
			}
			assert.Equal(t, context.DeadlineExceeded, err)
		})
	}
	t.Run("cancelled before", func(t *testing.T) {
		f := newFixture(t, fakebackend.Echo(), nil)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		assert.Equal(t, context.Canceled, f.e.Warm(ctx))
		assert.Zero(t, f.fb.Counts().Warms)
	})
}

func TestNilContext(t *testing.T) {
	f := newFixture(t, fakebackend.Echo(), nil)
	//nolint:staticcheck // a nil context is exactly what is tested
	_, err := f.e.Evaluate(nil, Call{Script: f.addr})
	assert.EqualError(t, err, "effect: nil context")
	requireInvalid(t, err, ErrInvalidCall)
	//nolint:staticcheck
	err = f.e.Warm(nil)
	assert.EqualError(t, err, "effect: nil context")
	requireInvalid(t, err, ErrInvalidCall)
	f.untouched(t)
}

func TestZeroEffect(t *testing.T) {
	var e Effect
	_, err := e.Evaluate(context.Background(), Call{})
	assert.EqualError(t, err, "effect: Effect not made by New")
	requireInvalid(t, err, ErrInvalidCall)
	err = e.Warm(context.Background())
	assert.EqualError(t, err, "effect: Effect not made by New")
	requireInvalid(t, err, ErrInvalidCall)
	assert.NoError(t, e.Close())
}

func TestConcurrentEvaluate(t *testing.T) {
	f := newFixture(t, fakebackend.Echo(), nil)
	const n = 32
	errs := make(chan error, n)
	for i := range n {
		go func() {
			out, err := f.call(context.Background(), map[string]int{"i": i})
			if err == nil && string(out) != `{"i":`+json.Number(itoa(i)).String()+`}` {
				err = errors.New("wrong value " + string(out))
			}
			errs <- err
		}()
	}
	for range n {
		require.NoError(t, <-errs)
	}
	assert.Equal(t, n, f.fb.Calls())
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
