package typescript_test

import (
	"testing"

	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/backends/typescript"
	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/conformance/conformancetest"
	tsfixtures "github.com/sandbank/sandbank/fixtures/typescript"
	"github.com/sandbank/sandbank/spi"
)

// wrapped returns a factory of inner wrapped for TypeScript.
func wrapped(inner spi.Factory) spi.Factory {
	return func() (spi.Backend, error) {
		js, err := inner()
		if err != nil {
			return nil, err
		}
		return typescript.Wrap(js, nil)
	}
}

// TestConformance runs the kit, with the TypeScript fixture set, on every
// pure-Go JavaScript engine wrapped for TypeScript (quickjs-wasmtime's is
// in builtin's cgo tests and the matrix).
func TestConformance(t *testing.T) {
	set := tsfixtures.Set()
	for name, inner := range map[string]spi.Factory{
		"goja":          func() (spi.Backend, error) { return goja.New(nil) },
		"quickjs":       func() (spi.Backend, error) { return quickjs.New(nil) },
		"quickjs-fresh": func() (spi.Backend, error) { return quickjs.New(&quickjs.Options{Mode: quickjs.ModeFresh}) },
	} {
		t.Run(name, func(t *testing.T) {
			report := conformancetest.Run(t, wrapped(inner), &conformance.Options{Fixtures: &set})
			if report.Failed() {
				t.Errorf("%s as TypeScript fails the kit", name)
			}
		})
	}
}
