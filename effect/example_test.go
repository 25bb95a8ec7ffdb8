package effect_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// doubler is a tiny in-process backend for the examples. Its "script" is
// ignored: it answers {"n": 2*input.n}, throws when n is negative, and
// waits for cancellation when n is zero. A real backend runs the script in
// a sandbox engine.
type doubler struct{}

func (doubler) Capabilities() spi.Capabilities {
	return spi.Capabilities{Language: "example", Network: spi.NetworkNone, WallClock: spi.WallClockHard, FreshPerRun: true}
}

func (doubler) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	var in struct{ N int }
	if err := json.Unmarshal(req.Input, &in); err != nil {
		return spi.Threw("TypeError", "input is not an object"), nil
	}
	switch {
	case in.N < 0:
		return spi.Threw("RangeError", "n must not be negative"), nil
	case in.N == 0:
		<-ctx.Done()
		return spi.Limited(spi.LimitWallClock), nil
	}
	out, _ := json.Marshal(map[string]int{"n": 2 * in.N, "input": in.N})
	return spi.OK(out), nil
}

func ExampleEffect_Evaluate() {
	scripts := new(storage.MemoryStore)
	addr, _ := scripts.Put([]byte("({n: input.n * 2, input: input.n})"))
	e, err := effect.New(scripts, doubler{}, nil)
	if err != nil {
		panic(err)
	}
	defer e.Close()

	out, err := e.Evaluate(context.Background(), effect.Call{
		Script: addr,
		Input:  map[string]int{"n": 21},
		Shape:  json.RawMessage(`{"type":"object","required":["n"]}`),
	})
	fmt.Println(string(out), err)
	// Output: {"input":21,"n":42} <nil>
}

func ExampleFailure() {
	scripts := new(storage.MemoryStore)
	addr, _ := scripts.Put([]byte("if (input.n < 0) throw new RangeError(...)"))
	e, _ := effect.New(scripts, doubler{}, nil)

	_, err := e.Evaluate(context.Background(), effect.Call{Script: addr, Input: map[string]int{"n": -1}})
	var f *effect.Failure
	if errors.As(err, &f) {
		fmt.Println(f.Code, f.Name, f.Message)
	}
	fmt.Println(errors.Is(err, effect.ErrScriptError), effect.Retryable(err))
	b, _ := json.Marshal(f)
	fmt.Println(string(b))

	_, err = e.Evaluate(context.Background(), effect.Call{Script: record.AddressOf([]byte("never stored"))})
	fmt.Println(err)
	// Output:
	// scriptError RangeError n must not be negative
	// true false
	// {"code":"scriptError","name":"RangeError","message":"n must not be negative"}
	// effect: scriptMissing (sha256:b68565cf5699273f6a21847b3fe44726374cbd6c3bfdc829527f1db2a0504341)
}

func ExampleEffect_Evaluate_cancellation() {
	scripts := new(storage.MemoryStore)
	addr, _ := scripts.Put([]byte("while (true) {}"))
	e, _ := effect.New(scripts, doubler{}, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	// The backend stops when its context ends and reports a wall-clock
	// limit, but the caller's cancellation wins: the result is ctx.Err().
	_, err := e.Evaluate(ctx, effect.Call{Script: addr, Input: map[string]int{"n": 0}})
	fmt.Println(err == context.DeadlineExceeded, errors.Is(err, context.DeadlineExceeded))
	// Output: true true
}

// A call can carry the script itself instead of its address: the effect
// hashes it and runs it as if it had been stored, without touching the
// store. With both, Source must hash to Script.
func ExampleCall_source() {
	e, _ := effect.New(new(storage.MemoryStore), doubler{}, nil)
	defer e.Close()

	src := []byte("({n: input.n * 2, input: input.n})")
	out, err := e.Evaluate(context.Background(), effect.Call{Source: src, Input: map[string]int{"n": 2}})
	fmt.Println(string(out), err)

	_, err = e.Evaluate(context.Background(), effect.Call{Script: record.AddressOf([]byte("other")), Source: src})
	fmt.Println(errors.Is(err, effect.ErrInvalidSource), errors.Is(err, effect.ErrInvalidCall))
	// Output:
	// {"input":2,"n":4} <nil>
	// true true
}

// Every error falls in one of three kinds: the script's typed failure, the
// caller's invalid call, or infrastructure worth retrying.
func ExampleErrInvalidCall() {
	e, _ := effect.New(new(storage.MemoryStore), doubler{}, &effect.Options{
		Limits: spi.Limits{WallClock: time.Second},
	})
	defer e.Close()

	calls := []effect.Call{
		{Source: []byte("..."), Input: map[string]int{"n": -1}},
		{Source: []byte("..."), Limits: spi.Limits{WallClock: time.Hour}},
		{Script: "sha256:not-an-address"},
	}
	for _, call := range calls {
		_, err := e.Evaluate(context.Background(), call)
		var f *effect.Failure
		switch {
		case errors.As(err, &f):
			fmt.Println("typed:", f.Code)
		case errors.Is(err, effect.ErrInvalidCall):
			fmt.Println("invalid call:", err, "| limits:", errors.Is(err, effect.ErrInvalidLimits))
		case effect.Retryable(err):
			fmt.Println("retry:", err)
		}
	}
	// Output:
	// typed: scriptError
	// invalid call: effect: call limits exceed the effect's ceiling | limits: true
	// invalid call: effect: malformed script address (want "sha256:" and 64 lower-case hex digits) | limits: false
}

// A backend reports spi kinds; a Failure carries effect kinds, a superset
// with the same names.
func ExampleLimitKindOf() {
	for _, k := range []spi.LimitKind{spi.LimitCPU, spi.LimitMemory, spi.LimitWallClock, 0} {
		ek, ok := record.LimitKindOf(k)
		fmt.Println(k, "->", ek, ok)
	}
	fmt.Println(record.LimitOutput, record.LimitInput)
	// Output:
	// cpu -> cpu true
	// memory -> memory true
	// wallClock -> wallClock true
	// LimitKind(0) -> LimitKind(0) false
	// output input
}
