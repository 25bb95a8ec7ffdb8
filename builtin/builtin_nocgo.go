//go:build !cgo

package builtin

import "github.com/sandbank/sandbank/spi"

// cgoEngines lists the built-in backends that need cgo: none in a build
// without cgo.
func cgoEngines() []engine { return nil }

// cgoCPUBudgetFactory is CPUBudgetFactory for the engines that need cgo:
// none in a build without cgo.
func cgoCPUBudgetFactory(string) spi.Factory { return nil }

// cgoCacheFactory is CacheFactory for the engines that need cgo: none in a
// build without cgo.
func cgoCacheFactory(string, string) spi.Factory { return nil }
