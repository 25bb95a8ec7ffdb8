package goja_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// The backend is used through package effect, which owns every guarantee
// around it.
func ExampleNew() {
	backend, err := goja.New(nil)
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

	// The script's clock is fake, and Math.random is the same on every run.
	clock, _ := scripts.Put([]byte(`[new Date().toISOString(), Math.random() === Math.random()]`))
	out, _ = e.Evaluate(ctx, effect.Call{Script: clock})
	fmt.Println(string(out))
	// Output:
	// {"total":6} <nil>
	// true effect: limitExceeded (wallClock)
	// ["2000-01-01T00:00:00.000Z",false]
}

// A caller that bounds scripts itself can bound them by the backend's
// limit too, so an oversized script fails the same way on every engine.
func ExampleBackend_MaxScriptBytes() {
	backend, err := goja.New(&goja.Options{MaxScriptBytes: 64 << 10})
	if err != nil {
		panic(err)
	}
	fmt.Println(backend.MaxScriptBytes())
	// Output:
	// 65536
}

// A promise completion value is awaited, and top-level await works: the
// result is what the promise settles to.
func ExampleNew_async() {
	backend, err := goja.New(nil)
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
