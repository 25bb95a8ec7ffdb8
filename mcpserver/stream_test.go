package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/mcpserver"
	"github.com/sandbank/sandbank/spi"
)

// wireReply is a JSON-RPC response as it is on the wire.
type wireReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// streamSession is a server served on a StreamTransport, driven line by
// line as a client on standard input and output would.
type streamSession struct {
	t      *testing.T
	in     *io.PipeWriter
	out    *bufio.Scanner
	served chan error
}

// serveStream serves srv on a StreamTransport bounding lines to max (0:
// the default) and initializes the session.
func serveStream(t *testing.T, srv *mcpserver.Server, max int64) *streamSession {
	t.Helper()
	return serveStreamAt(t, srv, max, "2025-11-25")
}

// serveStreamAt is serveStream with the client asking for protocol
// version.
func serveStreamAt(t *testing.T, srv *mcpserver.Server, max int64, version string) *streamSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &streamSession{t: t, in: inW, out: bufio.NewScanner(outR), served: make(chan error, 1)}
	s.out.Buffer(nil, 1<<20)
	go func() {
		s.served <- srv.MCP().Run(context.Background(), &mcpserver.StreamTransport{Reader: inR, Writer: outW, MaxMessageBytes: max})
		_ = outW.Close()
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		_ = outR.Close()
		select {
		case <-s.served:
		case <-time.After(testTimeout):
			t.Error("the server did not end")
		}
		_ = srv.Close()
	})
	s.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`)
	r := s.reply()
	require.Nil(t, r.Error, "initialize")
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *streamSession) send(line string) {
	s.t.Helper()
	sent := make(chan error, 1)
	go func() {
		_, err := io.WriteString(s.in, line+"\n")
		sent <- err
	}()
	select {
	case err := <-sent:
		require.NoError(s.t, err)
	case <-time.After(testTimeout):
		s.t.Fatal("the server reads no more lines")
	}
}

// reply reads the next line the server writes.
func (s *streamSession) reply() wireReply {
	s.t.Helper()
	got := make(chan bool, 1)
	go func() { got <- s.out.Scan() }()
	select {
	case ok := <-got:
		require.True(s.t, ok, "the server wrote no more lines: %v", s.out.Err())
	case <-time.After(testTimeout):
		s.t.Fatal("no reply")
	}
	var r wireReply
	require.NoError(s.t, json.Unmarshal(s.out.Bytes(), &r), "%s", s.out.Bytes())
	assert.Equal(s.t, "2.0", r.JSONRPC)
	return r
}

// toolsList sends tools/list with id and checks its answer.
func (s *streamSession) toolsList(id int) {
	s.t.Helper()
	idText, _ := json.Marshal(id)
	s.send(`{"jsonrpc":"2.0","id":` + string(idText) + `,"method":"tools/list"}`)
	r := s.reply()
	assert.JSONEq(s.t, string(idText), string(r.ID))
	assert.Nil(s.t, r.Error)
	assert.Contains(s.t, string(r.Result), "run_javascript")
}

func TestStreamAnswersABadLineAndGoesOn(t *testing.T) {
	const max = 4096
	cases := []struct {
		name, line string
		code       int64
		id         string
	}{
		{"not JSON", `this is not json`, -32700, "null"},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":\"\xff\"}", -32700, "null"},
		{"cut short", `{"jsonrpc":"2.0","id":1,`, -32700, "null"},
		{"a batch", `[{"jsonrpc":"2.0","id":7,"method":"ping"}]`, -32600, "null"},
		{"an empty batch", `[]`, -32600, "null"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":3,"method":"ping"}`, -32600, "3"},
		{"no jsonrpc", `{"id":"x","method":"ping"}`, -32600, `"x"`},
		{"JSONRPC in capitals", `{"JSONRPC":"2.0","id":4,"method":"ping"}`, -32600, "4"},
		{"an object as id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, "null"},
		{"a null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, -32600, "null"},
		{"a fraction as id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, -32600, "null"},
		{"a huge id", `{"jsonrpc":"2.0","id":1e300,"method":"ping"}`, -32600, "null"},
		{"a number as method", `{"jsonrpc":"2.0","id":"m","method":5}`, -32600, `"m"`},
		{"neither method nor id", `{"jsonrpc":"2.0"}`, -32600, "null"},
		{"a bare number", `42`, -32600, "null"},
		{"a bare string", `"ping"`, -32600, "null"},
		{"too deep", `{"jsonrpc":"2.0","id":9,"method":"ping","params":{"a":` + strings.Repeat("[", 1100) + strings.Repeat("]", 1100) + `}}`, -32600, "9"},
		{"too long", `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"a":"` + strings.Repeat("x", 2*max) + `"}}`, -32600, "null"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := serveStream(t, newServer(t, newFakes(), nil, "javascript"), max)
			s.send(c.line)
			r := s.reply()
			require.NotNil(t, r.Error, "an error reply")
			assert.Equal(t, c.code, r.Error.Code)
			assert.JSONEq(t, c.id, string(r.ID))
			assert.True(t, strings.HasPrefix(r.Error.Message, "mcpserver: "), r.Error.Message)
			assert.Less(t, len(r.Error.Message), 200, "bounded")
			s.toolsList(100 + i) // the session goes on
		})
	}
}

func TestStreamAnswersARequestInFlightAtTheEndOfInput(t *testing.T) {
	f := newFakes()
	s := serveStream(t, newServer(t, f, &mcpserver.Options{Limits: spi.Limits{WallClock: time.Hour}}, "javascript"), 0)
	s.send(`{"jsonrpc":"2.0","id":"last","method":"tools/call","params":{"name":"run_javascript","arguments":{"script":"gate"}}}`)
	select {
	case <-f.started:
	case <-time.After(testTimeout):
		t.Fatal("the run did not start")
	}
	require.NoError(t, s.in.Close()) // the end of the input, the call in flight
	close(f.gate)
	r := s.reply()
	assert.JSONEq(t, `"last"`, string(r.ID))
	require.Nil(t, r.Error)
	assert.Contains(t, string(r.Result), "gated")
	select {
	case err := <-s.served:
		assert.NoError(t, err, "the session ends at the end of its input")
		s.served <- err // for the cleanup
	case <-time.After(testTimeout):
		t.Fatal("the session did not end")
	}
}

func TestStreamDoesNotAnswerACancelledCall(t *testing.T) {
	f := newFakes()
	s := serveStream(t, newServer(t, f, &mcpserver.Options{Limits: spi.Limits{WallClock: time.Hour}}, "javascript"), 0)
	s.send(`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"run_javascript","arguments":{"script":"block"}}}`)
	select {
	case <-f.started:
	case <-time.After(testTimeout):
		t.Fatal("the run did not start")
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c"}}`)
	select {
	case <-f.canceled:
	case <-time.After(testTimeout):
		t.Fatal("the cancellation did not reach the run")
	}
	s.toolsList(1)
	// The cancelled call has no answer, even once the input ends and
	// every request is answered.
	require.NoError(t, s.in.Close())
	for _, line := range s.rest() {
		assert.NotContains(t, line, `"c"`, "an answer to the cancelled call")
	}
}

// rest reads the lines the server writes until it ends.
func (s *streamSession) rest() []string {
	s.t.Helper()
	lines := make(chan []string, 1)
	go func() {
		var out []string
		for s.out.Scan() {
			out = append(out, s.out.Text())
		}
		lines <- out
	}()
	select {
	case out := <-lines:
		return out
	case <-time.After(testTimeout):
		s.t.Fatal("the server did not end")
		return nil
	}
}

func TestStreamServesABatchWhereTheProtocolHasThem(t *testing.T) {
	s := serveStreamAt(t, newServer(t, newFakes(), nil, "javascript"), 0, "2025-03-26")
	s.send(`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	got := make(chan bool, 1)
	go func() { got <- s.out.Scan() }()
	select {
	case ok := <-got:
		require.True(t, ok)
	case <-time.After(testTimeout):
		t.Fatal("no reply")
	}
	var replies []wireReply
	require.NoError(t, json.Unmarshal(s.out.Bytes(), &replies), "%s", s.out.Bytes())
	require.Len(t, replies, 2)
	for _, r := range replies {
		assert.Nil(t, r.Error)
	}
	s.toolsList(3)
}
