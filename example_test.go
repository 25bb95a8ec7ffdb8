package sandbank_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/storage"
)

// Example is README's Go quick start, word for word (TestReadmeGoBlocks
// holds them together): one JavaScript script, stored by content address
// and run through the effect on QuickJS, each kind of error told apart.
func Example() {
	// nil options: the defaults; the compiled module is cached in
	// os.UserCacheDir()/sandbank, so only a machine's first process
	// compiles QuickJS (about a second).
	backend, err := quickjs.New(nil)
	if err != nil {
		log.Fatal(err)
	}

	// Scripts are stored, and run, by content address.
	store := new(storage.MemoryStore)
	addr, err := store.Put([]byte(`({ total: input.rows.reduce((s, r) => s + r.n, 0) })`))
	if err != nil {
		log.Fatal(err)
	}

	eff, err := effect.New(store, backend, nil) // nil options: the defaults
	if err != nil {
		log.Fatal(err)
	}
	defer eff.Close()

	out, err := eff.Evaluate(context.Background(), effect.Call{
		Script: addr,
		Input:  map[string]any{"rows": []map[string]int{{"n": 1}, {"n": 2}}},
	})
	var failure *effect.Failure
	switch {
	case errors.As(err, &failure): // the script's own doing: do not retry
		fmt.Println("script failed:", failure.Code, failure)
	case errors.Is(err, effect.ErrInvalidCall): // our mistake: fix the call
		log.Fatal(err)
	case err != nil: // infrastructure (effect.Retryable), or ctx ended
		log.Fatal(err)
	default:
		fmt.Println(string(out)) // {"total":3}
	}
	// Output: {"total":3}
}
