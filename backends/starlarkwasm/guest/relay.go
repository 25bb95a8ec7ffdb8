package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/sandbank/sandbank/internal/runfiles"
	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
	"github.com/sandbank/sandbank/spi"
)

// hostRelay is the script's spi.Host inside the guest: a call is a
// host-call record on stdout, then the reply the host writes to stdin,
// read while the whole guest waits (it has one thread).
type hostRelay struct {
	out   io.Writer
	in    *bufio.Reader
	nonce wasmguest.Nonce
}

// errNoReply is what the script sees when the host did not answer (it is
// stopping the run).
var errNoReply = errors.New("the host did not answer the call")

// Call implements spi.Host.
func (h *hostRelay) Call(_ context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false) // the argument's text goes to the host as it is
	if err := enc.Encode([2]string{name, string(args)}); err != nil {
		return nil, err
	}
	if err := wasmguest.WriteRecord(h.out, h.nonce, wasmguest.RecHostCall, bytes.TrimSuffix(body.Bytes(), []byte("\n"))); err != nil {
		return nil, errNoReply
	}
	reply, failed, err := wasmguest.ReadReply(h.in)
	switch {
	case err != nil:
		return nil, errNoReply
	case failed:
		return nil, errors.New(string(reply))
	}
	return reply, nil
}

// logRelay is the script's spi.LogSink inside the guest: every line is a
// log record on stderr (wasmguest.WriteLog, the one log framing), which
// the host's wasmguest.Stderr takes out of the stream and hands to the
// run's sink. The host bounds the log; the guest always asks for more.
type logRelay struct {
	out   io.Writer
	nonce wasmguest.Nonce
}

// Log implements spi.LogSink.
func (l *logRelay) Log(level spi.LogLevel, stream spi.LogStream, line string) bool {
	return wasmguest.WriteLog(l.out, l.nonce, level, stream, line) == nil
}

// fileRelay is the script's files inside the guest
// (starlark.Options.Files): every operation is a file record on stdout
// and the reply the host writes to stdin (wasmguest.FileOp). The host
// holds the run's files, checks names and bounds, and decides a write
// past them.
type fileRelay struct {
	out   io.Writer
	in    *bufio.Reader
	nonce wasmguest.Nonce
}

// op asks the host for one file operation.
func (f *fileRelay) op(header any, data []byte) ([]byte, error) {
	h, err := json.Marshal(header)
	if err != nil {
		return nil, err
	}
	body, failed, limit, err := wasmguest.FileOp(f.out, f.in, f.nonce, h, data)
	switch {
	case err != nil:
		return nil, errNoReply
	case limit:
		return nil, runfiles.ErrLimit
	case failed:
		return nil, errors.New(string(body))
	}
	return body, nil
}

// cut is as much of name as the host needs to refuse it.
func cut(name string) string {
	if len(name) > wasmguest.MaxFileNameUnits {
		return name[:wasmguest.MaxFileNameUnits]
	}
	return name
}

// Read implements starlark.FileStore.
func (f *fileRelay) Read(name string) ([]byte, error) {
	return f.op([]string{wasmguest.FileRead, cut(name), "b"}, nil)
}

// List implements starlark.FileStore: nil when the host did not answer
// (it is stopping the run).
func (f *fileRelay) List() []string {
	body, err := f.op([]string{wasmguest.FileList}, nil)
	var names []string
	if err != nil || json.Unmarshal(body, &names) != nil {
		return nil
	}
	return names
}

// Write implements starlark.FileStore.
func (f *fileRelay) Write(name string, data []byte) error {
	if data == nil {
		data = []byte{}
	}
	_, err := f.op([]any{wasmguest.FileWrite, cut(name), "b", len(data)}, data)
	return err
}
