package effect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

// Rule 1: the input is serialised and bounded before the script is read or
// the backend called.

type cycle struct{ Next *cycle }

type panickyMarshaler struct{}

func (panickyMarshaler) MarshalJSON() ([]byte, error) { panic("marshaler exploded") }

type failingMarshaler struct{}

func (failingMarshaler) MarshalJSON() ([]byte, error) { return nil, errors.New("cannot marshal") }

func TestRule1InputNotSerializable(t *testing.T) {
	loop := &cycle{}
	loop.Next = loop
	cases := []struct {
		name  string
		input any
	}{
		{"channel", make(chan int)},
		{"func", func() {}},
		{"NaN", math.NaN()},
		{"infinity", map[string]float64{"x": math.Inf(1)}},
		{"cycle", loop},
		{"invalid raw JSON", json.RawMessage(`{"a":`)},
		{"empty raw JSON", json.RawMessage(nil)},
		{"two raw values", json.RawMessage(`1 2`)},
		{"marshaler panics", panickyMarshaler{}},
		{"marshaler fails", failingMarshaler{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fakebackend.Echo(), nil)
			_, err := f.call(context.Background(), tc.input)
			fail := requireFailure(t, err, record.CodeInputNotSerializable)
			assert.ErrorIs(t, err, ErrInputNotSerializable)
			assert.NotEmpty(t, fail.Reason)
			assert.True(t, utf8.ValidString(fail.Reason))
			f.untouched(t)
		})
	}
}

func TestRule1InputTooLarge(t *testing.T) {
	cases := []struct {
		name  string
		input any
		bytes int64
	}{
		{"Go value", strings.Repeat("x", 20), 22},
		{"raw JSON", json.RawMessage(`"` + strings.Repeat("x", 20) + `"`), 22},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fakebackend.Echo(), &Options{MaxInputBytes: 21})
			_, err := f.call(context.Background(), tc.input)
			fail := requireFailure(t, err, record.CodeInputTooLarge)
			assert.ErrorIs(t, err, ErrInputTooLarge)
			assert.Equal(t, tc.bytes, fail.Bytes)
			assert.Equal(t, int64(21), fail.Limit)
			assert.Equal(t, record.LimitInput, fail.Kind, "refused by the input ceiling, before the run")
			assert.Contains(t, err.Error(), "input ceiling")
			f.untouched(t)
		})
	}
	t.Run("at the limit passes", func(t *testing.T) {
		f := newFixture(t, fakebackend.Echo(), &Options{MaxInputBytes: 22})
		out, err := f.call(context.Background(), strings.Repeat("x", 20))
		require.NoError(t, err)
		assert.Equal(t, `"`+strings.Repeat("x", 20)+`"`, string(out))
	})
	t.Run("default is the default memory limit", func(t *testing.T) {
		f := newFixture(t, fakebackend.Echo(), nil)
		assert.Equal(t, DefaultMemoryBytes, f.e.maxInput)
	})
}

func TestRule1InputBeforeScript(t *testing.T) {
	// A call with a bad input AND a missing script reports the input; a
	// malformed address is a mistake in the call itself, checked first.
	f := newFixture(t, fakebackend.Echo(), nil)
	_, err := f.e.Evaluate(context.Background(), Call{Script: record.AddressOf([]byte("absent")), Input: make(chan int)})
	requireFailure(t, err, record.CodeInputNotSerializable)
	_, err = f.e.Evaluate(context.Background(), Call{Script: "not an address", Input: math.NaN()})
	requireInvalid(t, err, ErrInvalidAddress)
	f.untouched(t)
}

func TestRule1InputReachesBackend(t *testing.T) {
	f := newFixture(t, fakebackend.Echo(), nil)
	raw := json.RawMessage(` {"z": 1, "a": [1, 2]} `)
	_, err := f.call(context.Background(), raw)
	require.NoError(t, err)
	assert.Equal(t, string(raw), string(f.fb.LastRequest().Input), "a raw input is passed as is")

	_, err = f.call(context.Background(), map[string]any{"b": "<&>", "a": 1})
	require.NoError(t, err)
	assert.JSONEq(t, `{"a":1,"b":"<&>"}`, string(f.fb.LastRequest().Input))
	assert.Equal(t, testScript, f.fb.LastRequest().Script)
}

// Rule 2: the script is fetched by content address and verified.

func TestRule2MalformedAddress(t *testing.T) {
	good := string(record.AddressOf(testScript))
	cases := map[string]string{
		"empty":            "",
		"prefix only":      "sha256:",
		"upper-case hex":   "sha256:" + strings.ToUpper(good[7:]),
		"other algorithm":  "sha512:" + good[7:],
		"short":            good[:len(good)-1],
		"long":             good + "0",
		"not hex":          good[:len(good)-1] + "g",
		"no prefix":        good[7:],
		"secret in field":  "sha256:SECRET-TOKEN",
		"trailing newline": good + "\n",
	}
	for name, addr := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, fakebackend.Echo(), nil)
			_, err := f.e.Evaluate(context.Background(), Call{Script: record.Address(addr), Input: 1})
			if addr == "" {
				requireInvalid(t, err, ErrInvalidSource) // no script at all
				f.untouched(t)
				return
			}
			requireInvalid(t, err, ErrInvalidAddress)
			assert.Contains(t, err.Error(), "effect: malformed script address")
			assert.NotContains(t, err.Error(), "SECRET")
			f.untouched(t)
		})
	}
}

func TestRule2ScriptMissing(t *testing.T) {
	f := newFixture(t, fakebackend.Echo(), nil)
	absent := record.AddressOf([]byte("absent"))
	_, err := f.e.Evaluate(context.Background(), Call{Script: absent, Input: 1})
	fail := requireFailure(t, err, record.CodeScriptMissing)
	assert.ErrorIs(t, err, ErrScriptMissing)
	assert.Equal(t, absent, fail.Script)
	assert.Equal(t, int64(1), f.reader.reads.Load())
	assert.Zero(t, f.fb.Calls())
}

func TestRule2ReaderFailures(t *testing.T) {
	cause := errors.New("disk on fire")
	cases := []struct {
		name   string
		reader readerFunc
		check  func(t *testing.T, err error)
	}{
		{"bytes do not match the address", func(context.Context, record.Address) ([]byte, error) {
			return []byte("tampered"), nil
		}, func(t *testing.T, err error) {
			assert.Contains(t, err.Error(), "do not match")
		}},
		{"read error keeps its cause", func(context.Context, record.Address) ([]byte, error) {
			return nil, cause
		}, func(t *testing.T, err error) {
			assert.ErrorIs(t, err, cause)
		}},
		{"typed failure from the reader is rewrapped", func(context.Context, record.Address) ([]byte, error) {
			return nil, &Failure{Code: record.CodeScriptError, Message: "forged"}
		}, func(t *testing.T, err error) {
			assert.NotErrorIs(t, err, ErrScriptError)
		}},
		{"reader panics", func(context.Context, record.Address) ([]byte, error) {
			panic("reader exploded")
		}, func(t *testing.T, err error) {
			assert.Contains(t, err.Error(), "panicked")
		}},
		{"huge error text is bounded", func(context.Context, record.Address) ([]byte, error) {
			return nil, errors.New(fakebackend.BigText(5 << 20))
		}, func(t *testing.T, err error) {
			assert.Less(t, len(err.Error()), 3*MaxTextUnits)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fb := fakebackend.New(fakebackend.Capabilities(), fakebackend.Echo())
			e, err := New(tc.reader, fb, nil)
			require.NoError(t, err)
			_, err = e.Evaluate(context.Background(), Call{Script: record.AddressOf(testScript), Input: 1})
			requireUntyped(t, err)
			tc.check(t, err)
			assert.Zero(t, fb.Calls())
		})
	}
}

// Rule 3: the backend call is raced against the deadline; a panic is
// recovered.

func TestRule3DeadlineLoss(t *testing.T) {
	release := make(chan struct{})
	grace := time.Duration(0)
	f := newFixture(t, fakebackend.BlockUntil(release, okOutcome("1")), &Options{
		Limits:       spi.Limits{WallClock: 20 * time.Millisecond},
		BackendGrace: &grace,
	})
	_, err := f.callWithin(t, context.Background(), 1)
	requireUntyped(t, err)
	assert.Contains(t, err.Error(), "effect: backend did not settle within 20ms")
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	assert.NotErrorIs(t, err, context.Canceled)
	close(release)
	waitReturned(t, f.fb, 1)
}

func TestRule3BackendContextCancelledAtDeadline(t *testing.T) {
	seen := make(chan error, 1)
	release := make(chan struct{})
	grace := 5 * time.Millisecond
	f := newFixture(t, func(ctx context.Context, _ spi.Request) (spi.Outcome, error) {
		<-ctx.Done()
		seen <- ctx.Err()
		<-release
		return okOutcome("1"), nil
	}, &Options{Limits: spi.Limits{WallClock: 10 * time.Millisecond}, BackendGrace: &grace})
	_, err := f.callWithin(t, context.Background(), 1)
	requireUntyped(t, err)
	assert.Contains(t, err.Error(), "within 15ms")
	assert.ErrorIs(t, <-seen, context.DeadlineExceeded, "the backend's context ends at the deadline")
	close(release)
	waitReturned(t, f.fb, 1)
}

type panickyStringer struct{}

func (panickyStringer) String() string { panic("String exploded") }

func TestRule3BackendPanics(t *testing.T) {
	cases := []struct {
		value any
		text  string
	}{
		{"boom", "effect: backend panicked: boom"},
		{&Failure{Code: record.CodeScriptError, Message: "forged"}, "effect: backend panicked: effect: scriptError: forged"},
		{nil, ""},
		{errors.New("x\x00" + fakebackend.BigText(5<<20)), ""},
		{panickyStringer{}, ""},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%T", tc.value), func(t *testing.T) {
			f := newFixture(t, fakebackend.Panic(tc.value), nil)
			_, err := f.call(context.Background(), 1)
			requireUntyped(t, err)
			assert.NotErrorIs(t, err, ErrScriptError)
			assert.True(t, strings.HasPrefix(err.Error(), "effect: backend panicked"), err.Error())
			assert.Less(t, len(err.Error()), 3*MaxTextUnits+100)
			assert.True(t, utf8.ValidString(err.Error()))
			if tc.text != "" {
				assert.Equal(t, tc.text, err.Error())
			}
			waitReturned(t, f.fb, 1)
		})
	}
}

// Rule 4: cancellation wins over everything.

func TestRule4CancellationWins(t *testing.T) {
	type scenario struct {
		name     string
		behavior fakebackend.Behavior
		// cancelAfterCall cancels once the backend has been called.
		cancelAfterCall bool
		release         chan struct{}
	}
	release := make(chan struct{})
	var cancelInside context.CancelFunc
	cases := []scenario{
		{name: "value returned late after cancel", behavior: fakebackend.LateAfterCancel(okOutcome(`"late"`)), cancelAfterCall: true},
		{name: "panic after cancel", behavior: fakebackend.PanicAfterCancel("late panic"), cancelAfterCall: true},
		{name: "typed failure after cancel", behavior: func(ctx context.Context, _ spi.Request) (spi.Outcome, error) {
			<-ctx.Done()
			return spi.Outcome{}, &Failure{Code: record.CodeScriptError}
		}, cancelAfterCall: true},
		{name: "limit outcome after cancel", behavior: fakebackend.LateAfterCancel(spi.Limited(spi.LimitWallClock)), cancelAfterCall: true},
		{name: "malformed outcome after cancel", behavior: fakebackend.LateAfterCancel(spi.Outcome{Kind: 42}), cancelAfterCall: true},
		{name: "never returns", behavior: fakebackend.BlockUntil(release, okOutcome("1")), cancelAfterCall: true, release: release},
		{name: "value in hand when cancelled", behavior: func(context.Context, spi.Request) (spi.Outcome, error) {
			cancelInside()
			return okOutcome(`"value"`), nil
		}},
		{name: "threw in hand when cancelled", behavior: func(context.Context, spi.Request) (spi.Outcome, error) {
			cancelInside()
			return spi.Threw("Error", "x"), nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.behavior, nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cancelInside = cancel
			done := make(chan error, 1)
			go func() {
				_, err := f.call(ctx, 1)
				done <- err
			}()
			if tc.cancelAfterCall {
				waitCalls(t, f.fb, 1)
				cancel()
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(watchdog):
				t.Fatal("Evaluate did not return after cancellation")
			}
			require.Equal(t, context.Canceled, err, "want ctx.Err() itself, unwrapped")
			assert.False(t, Retryable(err))
			if tc.release != nil {
				close(tc.release)
			}
			waitReturned(t, f.fb, 1)
		})
	}
}

func TestRule4CancelledBeforeCall(t *testing.T) {
	f := newFixture(t, fakebackend.Echo(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.call(ctx, 1)
	require.Equal(t, context.Canceled, err)
	// Even a bad input reports the cancellation.
	_, err = f.call(ctx, make(chan int))
	require.Equal(t, context.Canceled, err)
	f.untouched(t)

	expired, cancel2 := context.WithTimeout(context.Background(), -time.Second)
	defer cancel2()
	_, err = f.call(expired, 1)
	require.Equal(t, context.DeadlineExceeded, err)
	f.untouched(t)
}

func TestRule4CancelledDuringRead(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fb := fakebackend.New(fakebackend.Capabilities(), fakebackend.Echo())
	cases := map[string]readerFunc{
		"reader returns the bytes": func(context.Context, record.Address) ([]byte, error) {
			cancel()
			return testScript, nil
		},
		"reader returns not found": func(context.Context, record.Address) ([]byte, error) {
			cancel()
			return nil, fmt.Errorf("gone: %w", fs.ErrNotExist)
		},
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			e, err := New(r, fb, nil)
			require.NoError(t, err)
			_, err = e.Evaluate(ctx, Call{Script: record.AddressOf(testScript), Input: 1})
			require.Equal(t, context.Canceled, err)
		})
	}
	assert.Zero(t, fb.Calls())
}

func TestRule4ReaderIgnoringCancellation(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	reader := readerFunc(func(context.Context, record.Address) ([]byte, error) {
		close(entered)
		<-release // ignores its context
		return testScript, nil
	})
	fb := fakebackend.New(fakebackend.Capabilities(), fakebackend.Echo())
	e, err := New(reader, fb, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := e.Evaluate(ctx, Call{Script: record.AddressOf(testScript), Input: 1})
		done <- err
	}()
	<-entered
	cancel()
	select {
	case err = <-done:
	case <-time.After(watchdog):
		t.Fatal("Evaluate waited for a script reader that ignores cancellation")
	}
	require.Equal(t, context.Canceled, err)
	assert.Zero(t, fb.Calls())
	close(release)
}

func TestRule4CallerDeadlineDuringCall(t *testing.T) {
	f := newFixture(t, fakebackend.LateAfterCancel(okOutcome("1")), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err := f.callWithin(t, ctx, 1)
	require.Equal(t, context.DeadlineExceeded, err)
	assert.True(t, Retryable(err), "the caller's own deadline is retryable")
	waitReturned(t, f.fb, 1)
}

// Rule 5: every outcome is validated and mapped.

func TestRule5Outcomes(t *testing.T) {
	cases := []struct {
		name    string
		out     spi.Outcome
		code    record.Code // 0: untyped
		want    Failure
		value   string
		errText string
	}{
		{name: "ok", out: okOutcome(`{"a":1}`), value: `{"a":1}`},
		{name: "ok without value", out: spi.Outcome{Kind: spi.KindOK}, errText: "without a valid JSON value"},
		{name: "ok with invalid JSON", out: okOutcome(`{"a":`), errText: "without a valid JSON value"},
		{name: "ok with two values", out: okOutcome(`1 2`), errText: "without a valid JSON value"},
		{name: "zero kind", out: spi.Outcome{}, errText: "invalid outcome kind 0"},
		{name: "unknown kind", out: spi.Outcome{Kind: 99, Value: json.RawMessage("1")}, errText: "invalid outcome kind 99"},
		{name: "limit without kind", out: spi.Outcome{Kind: spi.KindLimit}, errText: "invalid limit kind 0"},
		{name: "unknown limit", out: spi.Limited(7), errText: "invalid limit kind 7"},
		{name: "cpu", out: spi.Limited(spi.LimitCPU), code: record.CodeLimitExceeded, want: Failure{Code: record.CodeLimitExceeded, Kind: record.LimitCPU}},
		{name: "memory", out: spi.Limited(spi.LimitMemory), code: record.CodeLimitExceeded, want: Failure{Code: record.CodeLimitExceeded, Kind: record.LimitMemory}},
		{name: "wall clock", out: spi.Limited(spi.LimitWallClock), code: record.CodeLimitExceeded, want: Failure{Code: record.CodeLimitExceeded, Kind: record.LimitWallClock}},
		{name: "threw", out: spi.Threw("TypeError", "x is not a function"), code: record.CodeScriptError,
			want: Failure{Code: record.CodeScriptError, Name: "TypeError", Message: "x is not a function"}},
		{name: "threw without name", out: spi.Threw("", "boom"), code: record.CodeScriptError, want: Failure{Code: record.CodeScriptError, Message: "boom"}},
		{name: "input too large", out: spi.InputTooLarge(), code: record.CodeInputTooLarge,
			want: Failure{Code: record.CodeInputTooLarge, Kind: record.LimitMemory, Bytes: 7, Limit: 1000}},
		{name: "infrastructure", out: spi.Infrastructure("engine crashed"), errText: "effect: backend infrastructure failure: engine crashed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fakebackend.Return(tc.out), nil)
			out, err := f.e.Evaluate(context.Background(), Call{Script: f.addr, Input: "input", Limits: spi.Limits{MemoryBytes: 1000}})
			switch {
			case tc.value != "":
				require.NoError(t, err)
				assert.Equal(t, tc.value, string(out))
			case tc.code == 0:
				requireUntyped(t, err)
				assert.Contains(t, err.Error(), tc.errText)
			default:
				fail := requireFailure(t, err, tc.code)
				assert.Equal(t, tc.want, *fail)
			}
		})
	}
}

type panickyError struct{}

func (panickyError) Error() string { panic("Error exploded") }

type backendError struct{ detail string }

func (e *backendError) Error() string { return "backend: " + e.detail }

func TestRule5BackendErrors(t *testing.T) {
	own := &backendError{detail: "pool exhausted"}
	cases := []struct {
		name  string
		err   error
		check func(t *testing.T, err error)
	}{
		{"own error type stays matchable", own, func(t *testing.T, err error) {
			var be *backendError
			require.ErrorAs(t, err, &be)
			assert.Same(t, own, be)
			assert.Equal(t, "effect: backend failed: backend: pool exhausted", err.Error())
		}},
		{"typed failure", &Failure{Code: record.CodeLimitExceeded, Kind: record.LimitMemory}, func(t *testing.T, err error) {
			assert.NotErrorIs(t, err, ErrLimitExceeded)
			assert.Contains(t, err.Error(), "limitExceeded")
		}},
		{"wrapped typed failure", fmt.Errorf("wrapped: %w", &Failure{Code: record.CodeScriptError, Message: "m"}), func(t *testing.T, err error) {
			assert.NotErrorIs(t, err, ErrScriptError)
		}},
		{"joined typed failure", errors.Join(errors.New("a"), &Failure{Code: record.CodeShapeMismatch}), func(t *testing.T, err error) {
			assert.NotErrorIs(t, err, ErrShapeMismatch)
		}},
		{"context error with caller alive", fmt.Errorf("gave up: %w", context.Canceled), func(t *testing.T, err error) {
			assert.NotErrorIs(t, err, context.Canceled)
		}},
		{"5 MB error text", errors.New(fakebackend.BigText(5 << 20)), func(t *testing.T, err error) {
			assert.True(t, strings.HasSuffix(err.Error(), truncationMarker))
			assert.LessOrEqual(t, utf16Len(err.Error()), len("effect: backend failed: ")+MaxTextUnits+utf16Len(truncationMarker))
		}},
		{"Error method panics", panickyError{}, func(t *testing.T, err error) {
			assert.Equal(t, "effect: backend failed: (error text unavailable)", err.Error())
		}},
		{"lone surrogate and control characters", errors.New("a" + fakebackend.LoneSurrogate + "\x00b\x1b[31m\nc"), func(t *testing.T, err error) {
			assert.Equal(t, "effect: backend failed: a\uFFFD\uFFFDb\uFFFD[31m\nc", err.Error())
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fakebackend.Fail(tc.err), nil)
			_, err := f.call(context.Background(), 1)
			requireUntyped(t, err)
			assert.True(t, utf8.ValidString(err.Error()))
			tc.check(t, err)
		})
	}
}

func TestRule5TextIsBounded(t *testing.T) {
	big := fakebackend.BigText(5 << 20)
	t.Run("threw", func(t *testing.T) {
		f := newFixture(t, fakebackend.Return(spi.Threw(big, big)), nil)
		_, err := f.call(context.Background(), 1)
		fail := requireFailure(t, err, record.CodeScriptError)
		for _, s := range []string{fail.Name, fail.Message} {
			assert.Equal(t, MaxTextUnits+utf16Len(truncationMarker), utf16Len(s))
			assert.True(t, strings.HasSuffix(s, truncationMarker))
		}
	})
	t.Run("threw with lone surrogates", func(t *testing.T) {
		f := newFixture(t, fakebackend.Return(spi.Threw("Err"+fakebackend.LoneSurrogate, "x\xffy\x07z")), nil)
		_, err := f.call(context.Background(), 1)
		fail := requireFailure(t, err, record.CodeScriptError)
		assert.Equal(t, "Err\uFFFD", fail.Name)
		assert.Equal(t, "x\uFFFDy\uFFFDz", fail.Message)
	})
	t.Run("infrastructure", func(t *testing.T) {
		f := newFixture(t, fakebackend.Return(spi.Infrastructure(big+fakebackend.LoneSurrogate)), nil)
		_, err := f.call(context.Background(), 1)
		requireUntyped(t, err)
		assert.True(t, strings.HasSuffix(err.Error(), truncationMarker))
		assert.Less(t, len(err.Error()), 3*MaxTextUnits)
	})
}

// Rule 6: the output is bounded.

func TestRule6OutputBound(t *testing.T) {
	cases := []struct {
		name  string
		value string
		ok    bool
	}{
		{"over", `"123456789"`, false}, // 11 bytes
		{"at the limit", `"12345678"`, true},
		{"white space does not count", "  [ 1 ,\n 2 , 3 ,\t4]  ", true}, // compact: [1,2,3,4] = 9
		{"huge", `"` + fakebackend.BigText(1<<20) + `"`, false},
		// Both the backend's compact text and the canonical text count.
		{"compact text over, canonical within", `"\u00e9\u00e9\u00e9\u00e9"`, false}, // 26 bytes compact, 10 canonical
		{"compact text within, canonical over", "\"\xff\xff\xff\xff\"", false},       // 6 bytes, 14 canonical (U+FFFD)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fakebackend.Return(okOutcome(tc.value)), &Options{MaxOutputBytes: 10})
			out, err := f.call(context.Background(), 1)
			if tc.ok {
				require.NoError(t, err)
				assert.LessOrEqual(t, len(out), 10)
				return
			}
			fail := requireFailure(t, err, record.CodeLimitExceeded)
			assert.Equal(t, record.LimitOutput, fail.Kind)
			assert.ErrorIs(t, err, ErrLimitExceeded)
		})
	}
}

func TestRule6OutputBoundBeforeShape(t *testing.T) {
	f := newFixture(t, fakebackend.Return(okOutcome(`"123456789"`)), &Options{MaxOutputBytes: 10})
	_, err := f.e.Evaluate(context.Background(), Call{Script: f.addr, Shape: json.RawMessage(`{"type":"number"}`)})
	fail := requireFailure(t, err, record.CodeLimitExceeded)
	assert.Equal(t, record.LimitOutput, fail.Kind)
}

// Rule 7: the result's shape is checked against the caller's schema.

func TestRule7Shape(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","maximum":10}},"required":["n"]}`)
	cases := []struct {
		name   string
		value  string
		reason string
	}{
		{"matches", `{"n":3}`, ""},
		{"big integer matches type", `{"n":-123456789012345678901234567890}`, ""},
		{"wrong type", `{"n":"3"}`, "at '/n': got string, want integer"},
		{"missing", `{}`, "missing property 'n'"},
		{"too big", `{"n":11}`, "/n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fakebackend.Return(okOutcome(tc.value)), nil)
			out, err := f.e.Evaluate(context.Background(), Call{Script: f.addr, Shape: schema})
			if tc.reason == "" {
				require.NoError(t, err)
				assert.JSONEq(t, tc.value, string(out))
				return
			}
			fail := requireFailure(t, err, record.CodeShapeMismatch)
			assert.ErrorIs(t, err, ErrShapeMismatch)
			assert.Contains(t, fail.Reason, tc.reason)
			assert.NotContains(t, fail.Reason, "\n")
		})
	}
}

func TestRule7ShapeReasonIsBounded(t *testing.T) {
	long := strings.Repeat("k", 5000)
	f := newFixture(t, fakebackend.Return(okOutcome(`{"`+long+`":1}`)), nil)
	_, err := f.e.Evaluate(context.Background(), Call{Script: f.addr, Shape: json.RawMessage(`{"additionalProperties":false}`)})
	fail := requireFailure(t, err, record.CodeShapeMismatch)
	assert.True(t, strings.HasSuffix(fail.Reason, truncationMarker), fail.Reason[:40])
}

func TestRule7InvalidShape(t *testing.T) {
	cases := map[string]string{
		"not JSON":          `{"type":`,
		"not a schema":      `{"type":"whatever"}`,
		"file reference":    `{"$ref":"file:///etc/passwd"}`,
		"network reference": `{"$ref":"https://example.com/s.json"}`,
	}
	for name, schema := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, fakebackend.Echo(), nil)
			_, err := f.e.Evaluate(context.Background(), Call{Script: f.addr, Input: 1, Shape: json.RawMessage(schema)})
			requireInvalid(t, err, ErrInvalidShape)
			assert.Contains(t, err.Error(), "effect: invalid shape")
			assert.NotContains(t, err.Error(), "root:")
			f.untouched(t)
		})
	}
}

func TestRule7ShapeLoadsNothing(t *testing.T) {
	// A schema on disk that the value would satisfy: were $ref followed,
	// the call would succeed.
	path := filepath.Join(t.TempDir(), "s.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"type":"number"}`), 0o600))
	f := newFixture(t, fakebackend.Return(okOutcome(`1`)), nil)
	_, err := f.e.Evaluate(context.Background(), Call{Script: f.addr, Shape: json.RawMessage(`{"$ref":"file://` + filepath.ToSlash(path) + `"}`)})
	requireInvalid(t, err, ErrInvalidShape)
	assert.Contains(t, err.Error(), "effect: invalid shape")
	assert.Zero(t, f.fb.Calls())
}

func TestRule7SchemaCache(t *testing.T) {
	f := newFixture(t, fakebackend.Return(okOutcome(`1`)), nil)
	s1 := json.RawMessage(`{"type":"number"}`)
	for range 3 {
		_, err := f.e.Evaluate(context.Background(), Call{Script: f.addr, Shape: s1})
		require.NoError(t, err)
	}
	assert.Equal(t, 1, f.e.shapes.len(), "one schema, compiled once")
	first, err := f.e.shapes.get(s1)
	require.NoError(t, err)
	again, err := f.e.shapes.get(append(json.RawMessage(nil), s1...))
	require.NoError(t, err)
	assert.Same(t, first, again, "same bytes, same compiled schema")

	for i := range maxCachedShapes + 10 {
		_, err := f.e.shapes.get(json.RawMessage(fmt.Sprintf(`{"maximum":%d}`, i)))
		require.NoError(t, err)
	}
	assert.LessOrEqual(t, f.e.shapes.len(), maxCachedShapes)
}

func TestRule7SchemaCacheConcurrent(t *testing.T) {
	f := newFixture(t, fakebackend.Return(okOutcome(`5`)), nil)
	errs := make(chan error, 64)
	for i := range 64 {
		go func() {
			shape := json.RawMessage(fmt.Sprintf(`{"minimum":%d}`, i%4))
			_, err := f.e.Evaluate(context.Background(), Call{Script: f.addr, Shape: shape})
			errs <- err
		}()
	}
	for range 64 {
		require.NoError(t, <-errs)
	}
	assert.Equal(t, 4, f.e.shapes.len())
}

// Rule 8: the value is returned as its canonical JSON round trip.

func TestRule8Canonical(t *testing.T) {
	cases := []struct {
		name, value, want string
	}{
		{"keys sorted, compact", "{ \"b\" : 1,\n \"a\" : [true, null] }", `{"a":[true,null],"b":1}`},
		{"big integers exact", `[12345678901234567890123, -9007199254740993, 2147483648]`, `[12345678901234567890123,-9007199254740993,2147483648]`},
		{"number text kept", `[1.0, 1e2, -0, 0.1]`, `[1.0,1e2,-0,0.1]`},
		{"no HTML escaping", `"<a href='x'>&</a>"`, `"<a href='x'>&</a>"`},
		{"escapes normalised", `"\u00e9\/\ud83d\ude00\t"`, `"é/😀\t"`},
		{"lone surrogate escape", `"\ud800"`, `"` + "\uFFFD" + `"`},
		{"invalid UTF-8", "\"a\xffb\"", `"a` + "\uFFFD" + `b"`},
		{"duplicate keys keep the last", `{"a":1,"a":2}`, `{"a":2}`},
		{"nested", `{"z":{"y":[{"b":1,"a":2}]}}`, `{"z":{"y":[{"a":2,"b":1}]}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fakebackend.Return(okOutcome(tc.value)), nil)
			first, err := f.call(context.Background(), 1)
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(first))
			replay, err := f.call(context.Background(), 1)
			require.NoError(t, err)
			assert.Equal(t, first, replay, "the same value gives the same bytes")
			assert.True(t, utf8.Valid(first))
		})
	}
}

func TestRule8ResultIsAFreshCopy(t *testing.T) {
	shared := []byte(`{"a":1}`)
	f := newFixture(t, func(context.Context, spi.Request) (spi.Outcome, error) {
		return spi.OK(shared), nil
	}, nil)
	out, err := f.call(context.Background(), 1)
	require.NoError(t, err)
	copy(shared, `{"b":2}`) // the backend changes what it returned
	assert.Equal(t, `{"a":1}`, string(out))
	out[2] = 'z' // the caller changes what it got
	copy(shared, `{"a":1}`)
	again, err := f.call(context.Background(), 1)
	require.NoError(t, err)
	assert.Equal(t, `{"a":1}`, string(again))
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}
