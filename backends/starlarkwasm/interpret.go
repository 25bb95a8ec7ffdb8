package starlarkwasm

import "github.com/sandbank/sandbank/internal/starlarkguest"

// facts is everything a run left behind that its interpretation needs;
// the interpretation (starlarkguest.Facts.Interpret) is the one the
// native engine (backends/starlarknative) uses too.
type facts = starlarkguest.Facts

const (
	endExit   = starlarkguest.EndExit
	endKilled = starlarkguest.EndKilled
	endTrap   = starlarkguest.EndTrap
)
