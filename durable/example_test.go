package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/durable"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/storage"
)

// A script asks a person to approve a deletion: the host function
// suspends the run, the continuation is stored as text, and the run
// resumes, later and elsewhere, with the person's answer.
func ExampleResume() {
	backend, err := quickjs.New(nil)
	if err != nil {
		panic(err)
	}
	defer backend.Close()
	eff, err := effect.New(new(storage.MemoryStore), backend, nil)
	if err != nil {
		panic(err)
	}
	script := []byte(`const ok = await host.approve({delete: input.rows});
ok ? "deleted " + input.rows + " rows" : "kept them"`)
	host := effect.HostFuncs{"approve": func(context.Context, json.RawMessage) (any, error) {
		return nil, effect.Suspend("waiting for a person")
	}}

	_, cont, err := durable.Run(context.Background(), eff, effect.Call{Source: script, Input: map[string]int{"rows": 40}, Host: host})
	var f *effect.Failure
	if errors.As(err, &f) {
		name, args, _ := cont.Pending()
		fmt.Println(f.Code, "at", name, string(args))
	}
	text, _ := cont.Encode() // store it anywhere; nothing holds the run meanwhile

	later, err := durable.Decode(text)
	if err != nil {
		panic(err)
	}
	rec, _, err := durable.Resume(context.Background(), eff, later, json.RawMessage(`true`), effect.Call{Host: host}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(rec.Value))
	// Output:
	// suspended at approve {"delete":40}
	// "deleted 40 rows"
}

// A door names the host calls that wait (durable.Suspending) and runs
// each segment the same way, first or resumed (durable.Segment).
func ExampleSegment() {
	backend, err := quickjs.New(nil)
	if err != nil {
		panic(err)
	}
	defer backend.Close()
	eff, err := effect.New(new(storage.MemoryStore), backend, nil)
	if err != nil {
		panic(err)
	}
	call := effect.Call{
		Source: []byte(`(await host.approve("purge")) ? "purged" : "kept"`),
		Host:   durable.Suspending([]string{"approve"}, "waiting for a person"),
	}
	_, cont, err := durable.Segment{}.Run(context.Background(), eff, call)
	fmt.Println(errors.Is(err, effect.ErrSuspended))
	rec, _, err := durable.Segment{From: cont, Answer: json.RawMessage(`false`)}.Run(context.Background(), eff, effect.Call{Host: call.Host})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(rec.Value))
	// Output:
	// true
	// "kept"
}
