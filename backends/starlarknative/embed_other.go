//go:build !(linux && (amd64 || arm64))

package starlarknative

// embeddedChild is nil here: the engine has a child for Linux on amd64
// and arm64 only.
var embeddedChild []byte
