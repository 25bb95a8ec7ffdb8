package starlark_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/sandbank/sandbank/backends/starlark"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/storage"
)

// A Starlark script defines main(input); its return value is the result.
// Integers stay exact past 2^53.
func Example() {
	backend, err := starlark.New(nil)
	if err != nil {
		panic(err)
	}
	scripts := new(storage.MemoryStore)
	addr, err := scripts.Put([]byte(`
def main(input):
    total = 0
    for row in input["rows"]:
        total += row["n"]
    return {"total": total, "count": len(input["rows"])}
`))
	if err != nil {
		panic(err)
	}
	e, err := effect.New(scripts, backend, nil)
	if err != nil {
		panic(err)
	}
	defer e.Close()

	out, err := e.Evaluate(context.Background(), effect.Call{
		Script: addr,
		Input:  map[string]any{"rows": []map[string]any{{"n": 9007199254740992}, {"n": 1}}},
	})
	fmt.Println(string(out), err)
	// Output: {"count":2,"total":9007199254740993} <nil>
}

// fail(...) is a typed scriptError; an exhausted step budget is the CPU
// limit.
func ExampleNew() {
	backend, err := starlark.New(&starlark.Options{MaxSteps: 10_000})
	if err != nil {
		panic(err)
	}
	scripts := new(storage.MemoryStore)
	fails, _ := scripts.Put([]byte("def main(input):\n    fail(\"no rows\")\n"))
	loops, _ := scripts.Put([]byte("def main(input):\n    for _ in range(1 << 62):\n        pass\n"))
	e, err := effect.New(scripts, backend, nil)
	if err != nil {
		panic(err)
	}
	defer e.Close()

	var f *effect.Failure
	_, err = e.Evaluate(context.Background(), effect.Call{Script: fails, Input: nil})
	if errors.As(err, &f) {
		fmt.Println(f.Code, f.Name, f.Message)
	}
	_, err = e.Evaluate(context.Background(), effect.Call{Script: loops, Input: nil})
	if errors.As(err, &f) {
		fmt.Println(f.Code, f.Kind)
	}
	// Output:
	// scriptError fail no rows
	// limitExceeded cpu
}

// A Starlark backend holds no resources: Warm has nothing to prepare and
// Close nothing to release, so either may be called at any time.
func ExampleBackend_Close() {
	backend, err := starlark.New(nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(backend.Warm(context.Background()), backend.Close())
	// Output:
	// <nil> <nil>
}
