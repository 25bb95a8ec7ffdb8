package registry_test

import (
	"errors"
	"fmt"

	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

// Two JavaScript engines of different strength; a flow picks one by what it
// requires, and gets a clear error when nothing qualifies.
func ExampleRegistry_Select() {
	var r registry.Registry
	notBuilt := func() (spi.Backend, error) { return nil, errors.New("example: not built") }
	r.Register(registry.Entry{
		Engine:   "fastjs",
		Language: "javascript",
		Capabilities: spi.Capabilities{Language: "javascript", Network: spi.NetworkNone,
			WallClock: spi.WallClockSoft, FreshPerRun: true},
		Factory:     notBuilt,
		Description: "fast start, soft limits",
	})
	r.Register(registry.Entry{
		Engine:   "safejs",
		Language: "javascript",
		Capabilities: spi.Capabilities{Language: "javascript", Network: spi.NetworkNone,
			WallClock: spi.WallClockHard, Memory: true, FreshPerRun: true},
		Factory:     notBuilt,
		Description: "hard wall clock, bounded memory",
	})

	def, _ := r.Default("javascript")
	fmt.Println("default:", def.Engine)

	e, err := r.Select("javascript", registry.Requirements{Memory: true, WallClock: spi.WallClockHard})
	fmt.Println("hard limits:", e.Engine, err)

	_, err = r.Select("javascript", registry.Requirements{Memory: true, CPU: true})
	fmt.Println(err)
	fmt.Println(errors.Is(err, registry.ErrNoMatch))

	_, err = r.Lookup("v8")
	fmt.Println(err)
	// Output:
	// default: fastjs
	// hard limits: safejs <nil>
	// registry: no "javascript" engine meets the requirements: fastjs lacks memory, cpu; safejs lacks cpu
	// true
	// registry: unknown engine "v8" (registered: fastjs, safejs); forgotten registration?
}

// Listing what is registered, as the command line does.
func ExampleRegistry_Engines() {
	r := registry.New()
	for _, name := range []string{"starlark", "quickjs", "goja"} {
		lang := "javascript"
		if name == "starlark" {
			lang = "starlark"
		}
		r.Register(registry.Entry{
			Engine:   name,
			Language: lang,
			Capabilities: spi.Capabilities{Language: lang, Network: spi.NetworkNone,
				WallClock: spi.WallClockHard, FreshPerRun: true},
			Factory: func() (spi.Backend, error) { return nil, errors.New("example: not built") },
		})
	}
	for _, e := range r.Engines() {
		fmt.Println(e.Language, e.Engine)
	}
	fmt.Println(r.Languages())
	// Output:
	// javascript goja
	// javascript quickjs
	// starlark starlark
	// [javascript starlark]
}
