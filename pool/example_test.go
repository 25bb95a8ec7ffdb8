package pool_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/pool"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

func Example() {
	var reg registry.Registry
	caps := fakebackend.Capabilities() // a JavaScript engine that echoes its input
	for _, name := range []string{"fast", "strict"} {
		reg.Register(registry.Entry{Engine: name, Language: "javascript", Capabilities: caps,
			Factory: func() (spi.Backend, error) { return fakebackend.New(caps, fakebackend.Echo()), nil }})
	}

	p, err := pool.New(&reg, nil)
	if err != nil {
		panic(err)
	}
	defer p.Close()

	// A caller allowed only "strict" asking for the language: the first
	// allowed engine of the language.
	entry, err := p.Resolve("", "javascript", "strict")
	if err != nil {
		panic(err)
	}
	limits, err := pool.Clamp(p.Ceiling(), spi.Limits{MemoryBytes: 8 << 20})
	if err != nil {
		panic(err)
	}
	eff, err := p.Effect(entry.Engine) // built on first use, then shared
	if err != nil {
		panic(err)
	}
	v, err := eff.Evaluate(context.Background(), effect.Call{Source: []byte("input"), Input: json.RawMessage(`{"n":1}`), Limits: limits})
	fmt.Println(entry.Engine, string(v), err)

	_, err = p.Resolve("fast", "", "strict")
	fmt.Println(effect.KindOf(err))
	// Output:
	// strict {"n":1} <nil>
	// invalidCall
}
