package starlarknative

// The child is the starlark-wasm guest (backends/starlarkwasm/guest),
// the project's own Go code around backends/starlark, built natively for
// each architecture the engine runs on, reproducibly (-trimpath, no VCS
// stamp, no symbols, an empty build ID, no cgo), so that the bytes are a
// function of the sources and the toolchain alone. TestChildIsFresh
// rebuilds them and fails when the embedded bytes differ.
//go:generate env GOTOOLCHAIN=go1.26.8 GOOS=linux GOARCH=amd64 CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath "-ldflags=-s -w -buildid=" -o child_linux_amd64 ../starlarkwasm/guest
//go:generate env GOTOOLCHAIN=go1.26.8 GOOS=linux GOARCH=arm64 CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath "-ldflags=-s -w -buildid=" -o child_linux_arm64 ../starlarkwasm/guest

// ChildToolchain is the Go release the embedded children are built with
// (the go:generate lines pin it).
const ChildToolchain = "go1.26.8"
