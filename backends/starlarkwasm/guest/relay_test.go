package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
	"github.com/sandbank/sandbank/spi"
)

// events records, in order, the host calls and the log lines of a run.
type events struct{ got []string }

func (e *events) Call(_ context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	e.got = append(e.got, "call "+name+" "+string(args))
	if name == "fails" {
		return nil, errors.New("no ✓ <&>")
	}
	return json.RawMessage(`{"n":9007199254740993,"s":"é😀 <&>"}`), nil
}

func (e *events) Log(level spi.LogLevel, stream spi.LogStream, line string) bool {
	e.got = append(e.got, "log "+level.String()+" "+stream.String()+" "+line)
	return true
}

// hostGuest runs the guest natively as the host runs it: stdin is the
// host's wasmguest.Stdin (the sized payload, then the replies), stdout
// goes to the record sink, stderr through wasmguest.Stderr, which takes
// the log records out.
func hostGuest(t *testing.T, script, input string, host spi.Host, sink spi.LogSink) (wasmguest.Record, string) {
	t.Helper()
	out := wasmguest.NewStdout(testNonce, 1<<20, nil)
	in := wasmguest.NewStdin(context.Background(), wasmguest.SizedPayload(testNonce, []byte(script), []byte(input), host != nil), out, host)
	logs := "0"
	if sink != nil {
		logs = "1"
	}
	var stderr bytes.Buffer
	code := run([]string{"guest", "1000000", "1000000", "1073741824", logs}, in, out, wasmguest.NewStderr(testNonce, sink, &stderr))
	require.Equal(t, 0, code, stderr.String())
	return out.Record(), stderr.String()
}

// TestGuestHostCallsAndLogs: the script's host calls reach the broker
// with their exact arguments, one at a time, its prints reach the sink in
// order between them, the answers come back as values (integers exact),
// and a failed call is catchable with its exact text.
func TestGuestHostCallsAndLogs(t *testing.T) {
	var ev events
	script := `def main(input):
    print("before ✓")
    a = host.probe(input)
    print("got", a["s"])
    v, err = host_try("fails", [1, "x"])
    print(err)
    return [a["n"], v, err, host.probe()]
`
	rec, stderr := hostGuest(t, script, `{"in":"é <&>"}`, &ev, &ev)
	require.Equal(t, byte(wasmguest.RecResult), rec.Kind, stderr)
	assert.JSONEq(t, `[9007199254740993, null, "no ✓ <&>", {"n":9007199254740993,"s":"é😀 <&>"}]`, string(rec.Body))
	assert.Contains(t, string(rec.Body), "9007199254740993")
	assert.Equal(t, []string{
		"log info stdout before ✓",
		`call probe {"in":"é <&>"}`,
		"log info stdout got é😀 <&>",
		`call fails [1,"x"]`,
		"log info stdout no ✓ <&>",
		"call probe null",
	}, ev.got)
}

// TestGuestUncaughtHostError: an uncaught host error ends the run as a
// thrown error that carries the broker's text.
func TestGuestUncaughtHostError(t *testing.T) {
	var ev events
	rec, _ := hostGuest(t, "def main(input):\n    return host.fails(1)", `{}`, &ev, nil)
	require.Equal(t, byte(wasmguest.RecThrew), rec.Kind)
	var pair [2]string
	require.NoError(t, json.Unmarshal(rec.Body, &pair))
	assert.Equal(t, "Error", pair[0])
	assert.Contains(t, pair[1], "no ✓ <&>")
}

// TestGuestNoHostNoLogs: without host functions a script naming host does
// not compile, and without a sink print writes no log record.
func TestGuestNoHostNoLogs(t *testing.T) {
	rec, _ := hostGuest(t, "def main(input):\n    return host.probe(1)", `{}`, nil, nil)
	require.Equal(t, byte(wasmguest.RecThrew), rec.Kind)
	assert.Contains(t, string(rec.Body), "host")

	var stdout bytes.Buffer
	code := run([]string{"guest", "1000000", "1000000", "1073741824", "0"},
		bytes.NewReader(wasmguest.SizedPayload(testNonce, []byte("def main(input):\n    print('x')\n    return 1"), []byte(`1`), false)), &stdout, &bytes.Buffer{})
	require.Equal(t, 0, code)
	assert.NotContains(t, stdout.String(), string(testNonce)+"L", "a run without a sink writes no log record")
}

// TestGuestHostGone: a host that stops answering (stdin ends) is an error
// the script sees, never a hang or a crash of the guest.
func TestGuestHostGone(t *testing.T) {
	var stdout bytes.Buffer
	payload := wasmguest.SizedPayload(testNonce, []byte("def main(input):\n    v, err = host_try('probe', 1)\n    return err"), []byte(`1`), true)
	code := run([]string{"guest", "1000000", "1000000", "1073741824", "0"}, bytes.NewReader(payload), &stdout, &bytes.Buffer{})
	require.Equal(t, 0, code)
	s := wasmguest.NewStdout(testNonce, 1<<20, nil)
	_, _ = s.Write(stdout.Bytes())
	assert.Equal(t, `"`+errNoReply.Error()+`"`, string(s.Record().Body))
	assert.True(t, strings.Contains(stdout.String(), string(testNonce)+"H"), "the call was written")
}
