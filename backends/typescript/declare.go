package typescript

import "github.com/sandbank/sandbank/spi"

// Declare returns the capabilities of a TypeScript backend wrapped around
// a JavaScript backend that declares js (what [Wrap] gives it, and its
// Capabilities method returns): js with the language "typescript", which
// is all the wrapper changes. A registry lists a TypeScript engine with
// it, from its JavaScript engine's declaration, without building either.
func Declare(js spi.Capabilities) spi.Capabilities {
	js.Language = Language
	return js
}

// Capabilities returns the inner backend's declaration with the language
// "typescript" (see [Declare]).
func (b *Backend) Capabilities() spi.Capabilities { return b.caps }
