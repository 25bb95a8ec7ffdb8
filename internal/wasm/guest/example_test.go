package guest_test

import (
	"bufio"
	"bytes"
	"fmt"

	"github.com/sandbank/sandbank/internal/wasm/guest"
	"github.com/sandbank/sandbank/spi"
)

// A guest written in Go writes framed records with WriteRecord; the host
// reads the conclusive one from its bounded stdout sink, and learns when
// the script started.
func Example() {
	nonce, err := guest.NewNonce()
	if err != nil {
		panic(err)
	}
	started := false
	host := guest.NewStdout(nonce, 1<<20, func() { started = true })

	var out bytes.Buffer // what the guest writes to its stdout
	_ = guest.WriteRecord(&out, nonce, guest.RecStart, nil)
	_ = guest.WriteRecord(&out, "forged0000000000000000000000000", guest.RecResult, []byte(`"forged"`))
	_ = guest.WriteRecord(&out, nonce, guest.RecResult, []byte(`{"ok":"✓"}`))
	_, _ = host.Write(out.Bytes())

	rec := host.Record()
	fmt.Println(started, string(rec.Kind), string(rec.Body))
	// Output:
	// true R {"ok":"✓"}
}

// printSink is an spi.LogSink that prints its lines.
type printSink struct{}

func (printSink) Log(level spi.LogLevel, stream spi.LogStream, line string) bool {
	fmt.Println(level, stream, line)
	return true
}

// A guest written in Go writes each line its script logs as a log record
// on its stderr; the host's Stderr hands each line to the run's log sink
// and the rest of the stream, the engine's own text, to its diagnostics.
func ExampleStderr() {
	nonce, err := guest.NewNonce()
	if err != nil {
		panic(err)
	}
	var diag bytes.Buffer
	stderr := guest.NewStderr(nonce, printSink{}, &diag)

	var written bytes.Buffer // what the guest writes to its stderr
	_ = guest.WriteLog(&written, nonce, spi.LevelInfo, spi.StreamStdout, "hello ✓")
	written.WriteString("fatal error: out of memory\n")
	_, _ = stderr.Write(written.Bytes())

	fmt.Print(diag.String())
	// Output:
	// info stdout hello ✓
	// fatal error: out of memory
}

// A guest's host call: the host-call record on stdout, then the reply the
// host's Stdin serves, read with ReadReply.
func ExampleReadReply() {
	stdin := bufio.NewReader(bytes.NewReader(guest.Reply([]byte(`{"answer":42}`), nil)))
	body, failed, err := guest.ReadReply(stdin)
	fmt.Println(string(body), failed, err)
	// Output:
	// {"answer":42} false <nil>
}
