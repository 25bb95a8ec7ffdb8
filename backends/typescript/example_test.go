package typescript_test

import (
	"context"
	"fmt"
	"log"

	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/backends/typescript"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/storage"
)

// Wrap any JavaScript backend to run TypeScript: types are stripped, the
// completion value is the result, as in JavaScript.
func ExampleWrap() {
	js, err := goja.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	ts, err := typescript.Wrap(js, nil)
	if err != nil {
		log.Fatal(err)
	}
	store := new(storage.MemoryStore)
	addr, err := store.Put([]byte(`
interface Order { id: string; total: number }
const orders = input.orders as Order[];
const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
({ count: orders.length, total: sum(orders.map(o => o.total)) })
`))
	if err != nil {
		log.Fatal(err)
	}
	eff, err := effect.New(store, ts, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer eff.Close()
	out, err := eff.Evaluate(context.Background(), effect.Call{
		Script: addr,
		Input:  map[string]any{"orders": []map[string]any{{"id": "a", "total": 5}, {"id": "b", "total": 7}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(out))
	// Output: {"count":2,"total":12}
}

// A TypeScript syntax error is the script's typed failure, with the
// TypeScript line and column.
func ExampleWrap_syntaxError() {
	js, err := goja.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	ts, err := typescript.Wrap(js, nil)
	if err != nil {
		log.Fatal(err)
	}
	store := new(storage.MemoryStore)
	addr, err := store.Put([]byte("const n: number = 1;\nconst m: = 2;\n"))
	if err != nil {
		log.Fatal(err)
	}
	eff, err := effect.New(store, ts, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer eff.Close()
	_, err = eff.Evaluate(context.Background(), effect.Call{Script: addr})
	fmt.Println(err)
	// Output: effect: scriptError: SyntaxError: script.ts:2:10: Unexpected "="
}
