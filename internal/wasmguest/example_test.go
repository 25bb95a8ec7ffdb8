package wasmguest_test

import (
	"bufio"
	"bytes"
	"fmt"

	"github.com/sandbank/sandbank/internal/wasmguest"
	"github.com/sandbank/sandbank/spi"
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

// printSink is an spi.LogSink that prints its lines.
type printSink struct{}

func (printSink) Log(level spi.LogLevel, stream spi.LogStream, line string) bool {
	fmt.Println(level, stream, line)
	return true
}

// A guest written in Go writes each line its script logs as a log record;
// the host's LogTap, in front of its stdout sink, hands the lines to the
// run's log sink and the rest of the stream to the sink.
func ExampleLogTap() {
	nonce, err := wasmguest.NewNonce()
	if err != nil {
		panic(err)
	}
	out := wasmguest.NewStdout(nonce, 1<<20, nil)
	tap := wasmguest.NewLogTap(nonce, out, printSink{})

	var guest bytes.Buffer
	_ = wasmguest.WriteRecord(&guest, nonce, wasmguest.RecStart, nil)
	_ = wasmguest.WriteLog(&guest, nonce, spi.LevelInfo, spi.StreamStdout, "hello ✓")
	_ = wasmguest.WriteRecord(&guest, nonce, wasmguest.RecResult, []byte(`1`))
	_, _ = tap.Write(guest.Bytes())

	fmt.Println(string(out.Record().Body))
	// Output:
	// info stdout hello ✓
	// 1
}

// A guest's host call: the host-call record on stdout, then the reply the
// host's Stdin serves, read with ReadReply.
func ExampleReadReply() {
	stdin := bufio.NewReader(bytes.NewReader(wasmguest.Reply([]byte(`{"answer":42}`), nil)))
	body, failed, err := wasmguest.ReadReply(stdin)
	fmt.Println(string(body), failed, err)
	// Output:
	// {"answer":42} false <nil>
}
