package spi_test

import (
	"fmt"

	"github.com/sandbank/sandbank/spi"
)

// printSink is a LogSink that prints what it receives; the effect's own
// sink bounds, scrubs and counts instead.
type printSink struct{ left int }

func (s *printSink) Log(level spi.LogLevel, stream spi.LogStream, line string) bool {
	fmt.Printf("%s %s %q\n", level, stream, line)
	s.left--
	return s.left > 0
}

// A wasm module's stdout is a byte stream: a LineWriter hands it to the
// sink line by line, and stops once the sink is full.
func ExampleLineWriter() {
	sink := &printSink{left: 3}
	w := spi.NewLineWriter(sink, spi.LevelInfo, spi.StreamStdout)
	fmt.Fprint(w, "first\nsec")
	fmt.Fprint(w, "ond\nthird")
	w.Flush()
	fmt.Fprint(w, "fourth\n") // the sink said it is full: dropped
	// Output:
	// info stdout "first"
	// info stdout "second"
	// info stdout "third"
}

// A backend writes each line the script logs through its request.
func ExampleRequest_Log() {
	req := spi.Request{Logs: &printSink{left: 10}}
	req.Log(spi.LevelWarn, spi.StreamStderr, "careful")
	fmt.Println(spi.Request{}.Log(spi.LevelInfo, spi.StreamStdout, "nobody listens"))
	// Output:
	// warn stderr "careful"
	// false
}
