//go:build !cgo

package main

import "github.com/sandbank/sandbank/spi"

// cgoCacheFactory is cacheFactory for the engines that need cgo: none
// without cgo.
func cgoCacheFactory(string, string) spi.Factory { return nil }
