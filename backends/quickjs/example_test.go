package quickjs_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// The backend is used through package effect, which owns every guarantee
// around it.
func ExampleNew() {
	backend, err := quickjs.New(nil)
	if err != nil {
		panic(err)
	}
	scripts := new(storage.MemoryStore)
	e, err := effect.New(scripts, backend, nil)
	if err != nil {
		panic(err)
	}
	defer e.Close()
	ctx := context.Background()

	// The result is the script's completion value; input is a global.
	reshape, _ := scripts.Put([]byte(`({total: input.items.reduce((a, b) => a + b, 0)})`))
	out, err := e.Evaluate(ctx, effect.Call{Script: reshape, Input: map[string][]int{"items": {1, 2, 3}}})
	fmt.Println(string(out), err)

	// A runaway loop is stopped at its wall clock.
	loop, _ := scripts.Put([]byte(`for (;;) {}`))
	_, err = e.Evaluate(ctx, effect.Call{Script: loop, Limits: spi.Limits{WallClock: 50 * time.Millisecond}})
	fmt.Println(errors.Is(err, effect.ErrLimitExceeded), err)

	// The script's clock is fake: it never reads the host's.
	clock, _ := scripts.Put([]byte(`new Date().toISOString()`))
	out, _ = e.Evaluate(ctx, effect.Call{Script: clock})
	fmt.Println(string(out))
	// Output:
	// {"total":6} <nil>
	// true effect: limitExceeded (wallClock)
	// "2000-01-01T00:00:00.001Z"
}

// A backend in the fresh-instance mode: every run instantiates the module
// and boots the engine anew (registered as engine "quickjs-fresh"). The
// default, parked mode gives each run the same pristine engine, restored.
func ExampleOptions_mode() {
	backend, err := quickjs.New(&quickjs.Options{Mode: quickjs.ModeFresh})
	if err != nil {
		panic(err)
	}
	scripts := new(storage.MemoryStore)
	e, err := effect.New(scripts, backend, nil)
	if err != nil {
		panic(err)
	}
	defer e.Close()
	counter, _ := scripts.Put([]byte(`globalThis.runs = (globalThis.runs || 0) + 1`))
	for range 2 {
		out, err := e.Evaluate(context.Background(), effect.Call{Script: counter})
		fmt.Println(string(out), err)
	}
	// Output:
	// 1 <nil>
	// 1 <nil>
}

// The C stack's size sets how deep a recursion may go; deeper is the
// thrown RangeError, never a wrong value.
func ExampleOptions_stackBytes() {
	backend, err := quickjs.New(&quickjs.Options{StackBytes: 2 << 20})
	if err != nil {
		panic(err)
	}
	scripts := new(storage.MemoryStore)
	e, err := effect.New(scripts, backend, nil)
	if err != nil {
		panic(err)
	}
	defer e.Close()
	deep, _ := scripts.Put([]byte(`function f(n) { return n === 0 ? 0 : 1 + f(n - 1) } f(input)`))
	for _, n := range []int{5000, 1000000} {
		out, err := e.Evaluate(context.Background(), effect.Call{Script: deep, Input: n})
		fmt.Println(string(out), err)
	}
	// Output:
	// 5000 <nil>
	//  effect: scriptError: RangeError: Maximum call stack size exceeded
}

// The mode a backend runs in: parked unless parked mode's rewriting
// passes refuse the module (a QuickJS binary that could write its
// function table), in which case New falls back to fresh mode and says
// why.
func ExampleBackend_Mode() {
	backend, err := quickjs.New(nil)
	if err != nil {
		panic(err)
	}
	defer backend.Close()
	fmt.Println(backend.Mode(), backend.ParkedModeError())
	// Output:
	// parked <nil>
}

// A start-up that overruns the cold-start allowance is a *StartupError
// naming the phase: untyped and retryable, never a limit of the script.
// Match it with errors.As.
func ExampleStartupError() {
	var err error = &quickjs.StartupError{Backend: "quickjs", Phase: "input", Allowance: 30 * time.Second}
	var se *quickjs.StartupError
	fmt.Println(errors.As(err, &se), se.Phase)
	fmt.Println(err)
	// Output:
	// true input
	// quickjs: start-up phase "input" exceeded the cold-start allowance of 30s
}

// A promise completion value is awaited, and top-level await works: the
// engine runs its job queue within the run's limits, and the result is
// what the promise settles to.
func ExampleNew_async() {
	backend, err := quickjs.New(nil)
	if err != nil {
		panic(err)
	}
	scripts := new(storage.MemoryStore)
	e, err := effect.New(scripts, backend, nil)
	if err != nil {
		panic(err)
	}
	defer e.Close()
	ctx := context.Background()
	for _, src := range []string{
		`(async () => { const x = await Promise.resolve(41); return x + 1 })()`,
		`const n = await Promise.resolve(input.n);` + "\n" + `({ doubled: n * 2 })`,
		`Promise.reject(new RangeError("no"))`,
		`new Promise(() => {})`,
	} {
		ref, _ := scripts.Put([]byte(src))
		out, err := e.Evaluate(ctx, effect.Call{Script: ref, Input: map[string]int{"n": 21}})
		fmt.Println(string(out), err)
	}
	// Output:
	// 42 <nil>
	// {"doubled":42} <nil>
	//  effect: scriptError: RangeError: no
	//  effect: scriptError: Error: the script's promise never settled
}
