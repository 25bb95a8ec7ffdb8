package wasmguest_test

import (
	"bytes"
	"fmt"

	"github.com/sandbank/sandbank/internal/wasmguest"
)

// A guest written in Go writes framed records with WriteRecord; the host
// reads the conclusive one from its bounded stdout sink, and learns when
// the script started.
func Example() {
	nonce, err := wasmguest.NewNonce()
	if err != nil {
		panic(err)
	}
	started := false
	host := wasmguest.NewStdout(nonce, 1<<20, func() { started = true })

	var guest bytes.Buffer // what the guest writes to its stdout
	_ = wasmguest.WriteRecord(&guest, nonce, wasmguest.RecStart, nil)
	_ = wasmguest.WriteRecord(&guest, "forged0000000000000000000000000", wasmguest.RecResult, []byte(`"forged"`))
	_ = wasmguest.WriteRecord(&guest, nonce, wasmguest.RecResult, []byte(`{"ok":"✓"}`))
	_, _ = host.Write(guest.Bytes())

	rec := host.Record()
	fmt.Println(started, string(rec.Kind), string(rec.Body))
	// Output:
	// true R {"ok":"✓"}
}
