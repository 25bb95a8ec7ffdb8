package effect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/storage"
)

// A script awaits two host functions at once and reshapes their data: the
// effect brokers both calls (names, sizes, count, the run's context) and
// the script never sees anything but the JSON each function returns.
func ExampleHostFunc() {
	backend, err := goja.New(nil)
	if err != nil {
		panic(err)
	}
	e, err := effect.New(new(storage.MemoryStore), backend, &effect.Options{
		Host: effect.HostFuncs{
			"orders": func(_ context.Context, args json.RawMessage) (any, error) {
				var q struct{ Since string }
				if err := json.Unmarshal(args, &q); err != nil || q.Since == "" {
					return nil, fmt.Errorf("orders: want {since: DATE}")
				}
				return []map[string]any{
					{"id": 1, "customer": "ada", "cents": 1250},
					{"id": 2, "customer": "bob", "cents": 990},
					{"id": 3, "customer": "ada", "cents": 300},
				}, nil
			},
			"customers": func(context.Context, json.RawMessage) (any, error) {
				return map[string]string{"ada": "Ada Lovelace", "bob": "Bob Kahn"}, nil
			},
		},
		MaxHostCalls: 10,
	})
	if err != nil {
		panic(err)
	}
	defer e.Close()

	script := `
const [orders, names] = await Promise.all([host.orders({since: input.since}), host.customers()]);
const totals = {};
for (const o of orders) totals[names[o.customer]] = (totals[names[o.customer]] || 0) + o.cents;
({since: input.since, totals})`
	out, err := e.Evaluate(context.Background(), effect.Call{
		Source: []byte(script),
		Input:  map[string]string{"since": "2026-01-01"},
	})
	fmt.Println(string(out), err)

	// A host function's error is thrown into the script, which may catch it.
	out, err = e.Evaluate(context.Background(), effect.Call{
		Source: []byte(`try { await host.orders({}) } catch (e) { "caught: " + e.message }`),
	})
	fmt.Println(string(out), err)
	// Output:
	// {"since":"2026-01-01","totals":{"Ada Lovelace":1550,"Bob Kahn":990}} <nil>
	// "caught: orders: want {since: DATE}" <nil>
}

// A host function that keeps its own log of calls sorts it by
// HostCallSeq: calls the script issues together run at once and may
// begin in any order, but each knows its place in the script's order.
func ExampleHostCallSeq() {
	backend, err := goja.New(nil)
	if err != nil {
		panic(err)
	}
	var mu sync.Mutex
	seen := map[int]string{}
	e, err := effect.New(new(storage.MemoryStore), backend, &effect.Options{
		Host: effect.HostFuncs{
			"fetch": func(ctx context.Context, args json.RawMessage) (any, error) {
				seq, _ := effect.HostCallSeq(ctx)
				mu.Lock()
				seen[seq] = string(args)
				mu.Unlock()
				return args, nil
			},
		},
	})
	if err != nil {
		panic(err)
	}
	defer e.Close()

	_, err = e.Evaluate(context.Background(), effect.Call{
		Source: []byte(`await Promise.all(["a", "b", "c"].map(k => host.fetch(k)))`),
	})
	fmt.Println(err)
	for seq := 1; seq <= len(seen); seq++ {
		fmt.Println(seq, seen[seq])
	}
	// Output:
	// <nil>
	// 1 "a"
	// 2 "b"
	// 3 "c"
}
