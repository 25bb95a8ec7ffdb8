package quickjs

import wasmhost "github.com/sandbank/sandbank/internal/wasm/host"

// NewWazeroClose is New with the module as shipped (no rewriting pass) and wazero's
// close-on-context-done stopping it: the configuration before the stop
// check, kept for benchmarks that measure the two side by side.
func NewWazeroClose(opts *Options) (*Backend, error) {
	set, err := opts.settings()
	if err != nil {
		return nil, err
	}
	set.stopCheck, set.wazeroClose = false, true
	return build(set)
}

// PreemptGrant is the stop check's budget between two visits, in units.
const PreemptGrant = wasmhost.StopGrant
