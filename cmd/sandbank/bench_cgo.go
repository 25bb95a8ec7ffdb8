//go:build cgo

package main

import (
	"github.com/sandbank/sandbank/backends/quickjs/wasmtime"
	"github.com/sandbank/sandbank/spi"
)

// cgoCacheFactory is cacheFactory for the engines that need cgo.
func cgoCacheFactory(engine, dir string) spi.Factory {
	if engine == wasmtime.Engine {
		return func() (spi.Backend, error) { return wasmtime.New(&wasmtime.Options{CacheDir: dir}) }
	}
	return nil
}
