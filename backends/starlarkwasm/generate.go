package starlarkwasm

import _ "embed"

// The guest module is built from ./guest (the project's own Go code around
// backends/starlark) with the pinned toolchain, reproducibly: -trimpath
// and an empty build ID make the bytes a function of the sources and the
// toolchain alone. TestGuestIsFresh rebuilds it and fails when the
// embedded bytes differ.
//go:generate env GOTOOLCHAIN=go1.26.8 GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -ldflags=-buildid= -o guest.wasm ./guest

// GuestToolchain is the Go release the embedded guest module is built
// with (the go:generate line pins it).
const GuestToolchain = "go1.26.8"

// embeddedGuest is the guest module, built by go generate.
//
//go:embed guest.wasm
var embeddedGuest []byte

// guestWASM is the guest module the backend rewrites: embeddedGuest
// (tests replace it).
var guestWASM = embeddedGuest
