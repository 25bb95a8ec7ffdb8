package sandbank_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/sandbank/sandbank/backends/python"
	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/spi"
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

// Example_files is README's files quick start, word for word: a CSV
// handed to a Python script that uses pandas and matplotlib (preloaded
// in the engine's zygote), and the chart the script writes under out/
// returned as a file. It needs Linux, bubblewrap and Debian's
// python3-pandas and python3-matplotlib, so go test compiles it and does
// not run it; backends/python's TestDataChart runs the same kind of job
// and checks its files' digests.
func Example_files() {
	// Needs Linux, bubblewrap, python3-pandas and python3-matplotlib:
	// README's test compiles this, it does not run it.
	py, err := python.New(&python.Options{Packages: []string{"pandas", "matplotlib"}})
	if err != nil {
		log.Fatal(err)
	}
	eff, err := effect.New(new(storage.MemoryStore), py, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer eff.Close()
	rec, err := eff.Run(context.Background(), effect.Call{
		Source: []byte("import pandas as pd\nt = pd.read_csv('data.csv').groupby('region')['units'].sum()\n" +
			"t.plot.bar().figure.savefig('out/chart.png')\n{k: int(v) for k, v in t.items()}"),
		Files: []spi.File{{Name: "data.csv", Data: []byte("region,units\nnorth,3\nsouth,5\n")}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(rec.Value), rec.Files[0].Name) // {"north":3,"south":5} chart.png (its bytes in Data, its digest in the receipt)
}
