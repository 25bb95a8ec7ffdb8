package codemode

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"testing"
)

// FuzzWireBody: whatever bytes an HTTP upstream sends, as one JSON body or
// as an event stream, reading them through a wireBody neither panics nor
// fails (they are far below MaxUpstreamMessageBytes), leaves every byte
// as it was unless a tool result's structured content is rewritten, and
// rewrites that only into a JSON string holding JSON text.
func FuzzWireBody(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"n":9007199254740993}}}`), false)
	f.Add([]byte("event: message\nid: 3\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"structuredContent\":[1e400]}}\n\n: comment\n\ndata: x\n"), true)
	f.Add([]byte("data: {\"result\":\ndata: {\"structuredContent\":{}}}\n\n"), true)
	f.Add([]byte("data: {\"result\":{\"structuredContent\":null}}\r\n\r\n"), true)
	f.Add([]byte("not JSON-RPC"), false)
	f.Add([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\nid: 2\n\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, events bool) {
		w := &upstreamWire{}
		b := &wireBody{src: io.NopCloser(bytes.NewReader(data)), br: bufio.NewReader(bytes.NewReader(data)), events: events, w: w}
		out, err := io.ReadAll(b)
		if err != nil || w.overflowed() {
			t.Fatalf("reading %q: %v (overflow %v)", data, err, w.overflowed())
		}
		if !bytes.Contains(data, []byte("structuredContent")) && !bytes.Equal(out, data) {
			t.Fatalf("%q became %q", data, out)
		}
		// Every message rewritten holds its structured content as a
		// string of JSON text.
		msgs := [][]byte{out}
		if events {
			msgs = nil
			for _, l := range bytes.Split(out, []byte("\n")) {
				if v, ok := bytes.CutPrefix(l, []byte("data: ")); ok {
					msgs = append(msgs, v)
				}
			}
		}
		for _, m := range msgs {
			var msg struct {
				Result struct {
					StructuredContent json.RawMessage `json:"structuredContent"`
				} `json:"result"`
			}
			if !bytes.Contains(data, m) && json.Unmarshal(m, &msg) == nil {
				var s string
				if json.Unmarshal(msg.Result.StructuredContent, &s) != nil || !json.Valid([]byte(s)) {
					t.Fatalf("a rewritten message %q holds structured content %q", m, msg.Result.StructuredContent)
				}
			}
		}
	})
}
