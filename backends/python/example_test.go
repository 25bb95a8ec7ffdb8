package python_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sandbank/sandbank/backends/python"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// A script's value is its last expression; host functions are host.NAME.
// The examples have no Output comment because they need a machine that
// can run the sandbox (Linux, bubblewrap, python3): TestExamples runs
// them where it can and checks what they print.
func Example() {
	backend, err := python.New(nil)
	if err != nil {
		fmt.Println(err) // no bubblewrap or python3 here
		return
	}
	e, err := effect.New(new(storage.MemoryStore), backend, &effect.Options{
		Host: effect.HostFuncs{"rate": func(context.Context, json.RawMessage) (any, error) { return 0.25, nil }},
	})
	if err != nil {
		panic(err)
	}
	defer e.Close()

	out, err := e.Evaluate(context.Background(), effect.Call{
		Source: []byte(`
total = sum(row["n"] for row in input["rows"])
{"total": total, "taxed": total * (1 + host.rate())}`),
		Input: map[string]any{"rows": []map[string]any{{"n": 100}, {"n": 20}}},
	})
	fmt.Println(string(out), err)
}

// An uncaught exception is a typed scriptError with its name, message and
// line; a runaway loop ends at the wall clock, whatever it does.
func Example_failures() {
	backend, err := python.New(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	e, err := effect.New(new(storage.MemoryStore), backend, nil)
	if err != nil {
		panic(err)
	}
	defer e.Close()

	var f *effect.Failure
	_, err = e.Evaluate(context.Background(), effect.Call{Source: []byte("rows = input['rows']\nrows[0] / rows[1]"),
		Input: map[string]any{"rows": []int{1, 0}}})
	if errors.As(err, &f) {
		fmt.Println(f.Code, f.Name, f.Message)
	}
	_, err = e.Evaluate(context.Background(), effect.Call{Source: []byte("while True:\n    pass"),
		Limits: spi.Limits{WallClock: 200 * time.Millisecond}})
	if errors.As(err, &f) {
		fmt.Println(f.Code, f.Kind)
	}
}

// Warm checks the machine under a context (the probe of the interpreter
// and one script in the sandbox, or what an earlier process kept in the
// cache directory) and starts the zygote, so that the first run waits for
// neither; it fails, saying why, where the kernel refuses the sandbox.
func ExampleBackend_Warm() {
	backend, err := python.New(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer backend.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := backend.Warm(ctx); err != nil {
		fmt.Println("this machine cannot run the sandbox:", err)
		return
	}
	v, _ := backend.Version(ctx)
	fmt.Println("ready:", v != "")
}
