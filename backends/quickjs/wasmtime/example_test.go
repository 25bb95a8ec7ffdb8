//go:build cgo

package wasmtime_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandbank/sandbank/backends/quickjs/wasmtime"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// The backend is used through package effect. Fuel gives a CPU budget
// that is the same on every run; the wall clock stops what fuel does not
// reach in time.
func ExampleNew() {
	backend, err := wasmtime.New(&wasmtime.Options{Fuel: 50_000_000})
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

	sum, _ := scripts.Put([]byte(`({total: input.items.reduce((a, b) => a + b, 0)})`))
	out, err := e.Evaluate(ctx, effect.Call{Script: sum, Input: map[string][]int{"items": {1, 2, 3}}})
	fmt.Println(string(out), err)

	// A runaway loop spends its fuel long before its wall clock runs out.
	loop, _ := scripts.Put([]byte(`for (;;) {}`))
	_, err = e.Evaluate(ctx, effect.Call{Script: loop, Limits: spi.Limits{WallClock: 5 * time.Second}})
	var f *effect.Failure
	fmt.Println(errors.As(err, &f) && f.Kind == record.LimitCPU)

	// The script's clock is fake: it never reads the host's.
	clock, _ := scripts.Put([]byte(`new Date().toISOString()`))
	out, err = e.Evaluate(ctx, effect.Call{Script: clock})
	fmt.Println(string(out), err)
	// Output:
	// {"total":6} <nil>
	// true
	// "2000-01-01T00:00:00.001Z" <nil>
}
