// Package doortest is the table of requests that every door of Sandbank
// (HTTP, MCP, Temporal, the command line) must answer alike: the same
// engine, or the same kind of refusal, because each resolves engines
// through package pool. The doors' tests import it; the Temporal module
// too, so one table serves both modules.
package doortest

import (
	"encoding/json"
	"time"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

// The engines of Registry: two JavaScript engines, the default first, and
// one Starlark engine. Each echoes its input.
const (
	JSDefault = "js-default"
	JSOther   = "js-other"
	Star      = "star"
)

// Registry returns a registry of the three fake engines, JSDefault the
// default of "javascript".
func Registry() *registry.Registry {
	reg := registry.New()
	for _, e := range []struct{ name, lang string }{{JSOther, "javascript"}, {JSDefault, "javascript"}, {Star, "starlark"}} {
		caps := fakebackend.Capabilities()
		caps.Language = e.lang
		reg.Register(registry.Entry{Engine: e.name, Language: e.lang, Capabilities: caps,
			Factory: func() (spi.Backend, error) { return fakebackend.New(caps, fakebackend.Echo()), nil }})
	}
	if err := reg.SetDefault("javascript", JSDefault); err != nil {
		panic(err)
	}
	return reg
}

// Input is every case's input; the engines echo it.
var Input = json.RawMessage(`{"n":1}`)

// Case is one request and the answer every door must give.
type Case struct {
	Name string
	// Engine and Language are what the request names; Allowed the engines
	// its caller (a tenant, a worker's engine list, an MCP admission) may
	// use, none meaning all. A door without such a restriction skips a
	// case that has one.
	Engine, Language string
	Allowed          []string
	// WallClock is the wall-clock limit the request asks for; zero asks
	// for none. Every door's ceiling is effect.DefaultWallClock. A door
	// without a ceiling of its own skips a case that asks for one.
	WallClock time.Duration
	// Want is the engine that runs it; empty when it is refused.
	Want string
	// Kind is the kind of the refusal (zero when it runs).
	Kind effect.Kind
}

// Cases are the requests.
var Cases = []Case{
	{Name: "a language runs its default", Language: "javascript", Want: JSDefault},
	{Name: "an engine runs", Engine: JSOther, Want: JSOther},
	{Name: "an engine with its language", Engine: JSOther, Language: "javascript", Want: JSOther},
	{Name: "another language", Language: "starlark", Want: Star},
	{Name: "a restricted caller gets its allowed engine of the language", Language: "javascript", Allowed: []string{JSOther, Star}, Want: JSOther},
	{Name: "a restricted caller gets the default when allowed", Language: "javascript", Allowed: []string{JSOther, JSDefault}, Want: JSDefault},
	{Name: "an engine the caller may not use", Engine: JSDefault, Allowed: []string{JSOther}, Kind: effect.KindInvalidCall},
	{Name: "no allowed engine of the language", Language: "starlark", Allowed: []string{JSOther}, Kind: effect.KindInvalidCall},
	{Name: "an engine of another language", Engine: JSOther, Language: "starlark", Kind: effect.KindInvalidCall},
	{Name: "an unknown engine", Engine: "nonesuch", Kind: effect.KindInvalidCall},
	{Name: "an unknown language", Language: "cobol", Kind: effect.KindInvalidCall},
	{Name: "neither engine nor language", Kind: effect.KindInvalidCall},
	{Name: "limits below the ceiling", Language: "javascript", WallClock: time.Second, Want: JSDefault},
	{Name: "limits above the ceiling", Language: "javascript", WallClock: 2 * effect.DefaultWallClock, Kind: effect.KindInvalidCall},
}
