package rewrite

import "strings"

// A Pass is one rewrite of a decoded module, applied in place. Its Name
// changes whenever the pass writes a different module for the same
// input, so that a cache of rewritten or compiled modules can include it
// in its key (see Version).
type Pass struct {
	Name  string
	Apply func(*Module) error
}

// PreemptPass is the preemption pass (Preempt) as a Pass.
var PreemptPass = Pass{Name: PreemptVersion, Apply: Preempt}

// Version names the output of RewriteWith for these passes, in this
// order: a cache of rewritten or compiled modules keys on the input's
// bytes and Version, or on the output's bytes.
func Version(passes ...Pass) string {
	names := make([]string, len(passes))
	for i, p := range passes {
		names[i] = p.Name
	}
	return "wasmrewrite-1/" + strings.Join(names, "+")
}

// Rewrite applies the preemption pass to a binary module and returns the
// rewritten binary: RewriteWith(wasm, PreemptPass).
func Rewrite(wasm []byte) ([]byte, error) {
	return RewriteWith(wasm, PreemptPass)
}

// RewriteWith decodes a binary module, applies the passes in order and
// encodes the result. It drops the DWARF sections (.debug_*), whose code
// offsets the passes invalidate; the name section is kept, with its
// function indices rewritten. An error wraps ErrMalformed or
// ErrUnsupported, or is a pass's own refusal.
func RewriteWith(wasm []byte, passes ...Pass) ([]byte, error) {
	m, err := Decode(wasm)
	if err != nil {
		return nil, err
	}
	for _, p := range passes {
		if err := p.Apply(m); err != nil {
			return nil, err
		}
	}
	m.DropCustom(".debug_")
	return m.Encode(), nil
}
