package wasmrewrite

// Version names the output of Rewrite: it changes whenever Rewrite
// writes a different module for the same input (a pass changed, or the
// set of passes did). A cache of rewritten or compiled modules keys on
// the input's bytes and Version, or on the output's bytes.
const Version = "wasmrewrite-1/" + PreemptVersion

// Rewrite applies the preemption pass to a binary module and returns the
// rewritten binary. It drops the DWARF sections (.debug_*), whose code
// offsets the pass invalidates; the name section is kept, with its
// function indices rewritten. An error wraps ErrMalformed or
// ErrUnsupported.
func Rewrite(wasm []byte) ([]byte, error) {
	m, err := Decode(wasm)
	if err != nil {
		return nil, err
	}
	if err := Preempt(m); err != nil {
		return nil, err
	}
	m.DropCustom(".debug_")
	return m.Encode(), nil
}
