package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/sandbank/sandbank/backends/starlark"
	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
	"github.com/sandbank/sandbank/spi"
)

func main() {
	os.Exit(serve())
}

// run is the whole guest; it returns the exit code (0 once a record was
// written).
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 5 {
		io.WriteString(stderr, "guest: want 4 arguments: steps, result bytes, memory limit, logs (0 or 1)\n")
		return 2
	}
	var n [3]int64
	for i, a := range args[1:4] {
		v, err := strconv.ParseInt(a, 10, 64)
		if err != nil || v <= 0 {
			io.WriteString(stderr, "guest: argument "+strconv.Itoa(i+1)+" is not a positive integer\n")
			return 2
		}
		n[i] = v
	}
	if args[4] != "0" && args[4] != "1" {
		io.WriteString(stderr, "guest: argument 4 is not 0 or 1\n")
		return 2
	}
	logs := args[4] == "1"
	// How the collector runs besides the memory limit is the build's
	// (gcPercent: serve_wasip1.go, serve_linux.go).
	debug.SetGCPercent(gcPercent)
	debug.SetMemoryLimit(n[2])

	in := bufio.NewReader(stdin)
	line, err := in.ReadString('\n')
	if err != nil {
		io.WriteString(stderr, "guest: no nonce line\n")
		return 2
	}
	nonce := wasmguest.Nonce(strings.TrimSuffix(line, "\n"))
	protocol := func(what string) int {
		io.WriteString(stderr, "guest: "+what+"\n")
		_ = wasmguest.WriteRecord(stdout, nonce, wasmguest.RecProtocol, nil)
		return 0
	}
	lit, err := in.ReadBytes('\n')
	if err != nil {
		return protocol("no script line")
	}
	var script string
	if err := json.Unmarshal(lit, &script); err != nil {
		return protocol("the script line is not a JSON string")
	}
	lit = nil
	size, err := in.ReadString('\n')
	if err != nil {
		return protocol("no size line")
	}
	size, hasHost := strings.CutPrefix(strings.TrimSuffix(size, "\n"), "h")
	inputLen, err := strconv.Atoi(size)
	if err != nil || inputLen < 0 {
		return protocol("the size line is not a length")
	}
	input := make([]byte, inputLen)
	if _, err := io.ReadFull(in, input); err != nil {
		return protocol("reading the input")
	}
	req := spi.Request{Script: []byte(script), Input: input}
	if hasHost {
		req.Host = &hostRelay{out: stdout, in: in, nonce: nonce}
	}
	if logs {
		req.Logs = &logRelay{out: stderr, nonce: nonce}
	}

	started := false
	b, err := starlark.New(&starlark.Options{
		MaxSteps:       n[0],
		MaxResultBytes: n[1],
		Files:          &fileRelay{out: stdout, in: in, nonce: nonce},
		OnStart: func() {
			started = true
			_ = wasmguest.WriteRecord(stdout, nonce, wasmguest.RecStart, nil)
		},
	})
	if err != nil {
		return protocol("options: " + err.Error())
	}
	out, err := b.Evaluate(context.Background(), req)
	if err != nil {
		return protocol("evaluate: " + err.Error())
	}
	switch out.Kind {
	case spi.KindOK:
		_ = wasmguest.WriteRecord(stdout, nonce, wasmguest.RecResult, out.Value)
	case spi.KindThrew:
		pair, _ := json.Marshal([2]string{out.Name, out.Message}) // invalid UTF-8 becomes U+FFFD
		_ = wasmguest.WriteRecord(stdout, nonce, wasmguest.RecThrew, pair)
	case spi.KindLimit:
		if out.Limit == spi.LimitFiles && started {
			// The host told the guest a write went past a bound: its
			// finding decides the outcome, no record is needed.
			return 0
		}
		if out.Limit != spi.LimitCPU || !started {
			return protocol("unexpected limit " + out.Limit.String())
		}
		_ = wasmguest.WriteRecord(stdout, nonce, wasmguest.RecCPU, nil)
	default:
		return protocol("outcome " + out.Kind.String() + ": " + out.Message)
	}
	return 0
}
