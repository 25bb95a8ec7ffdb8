package codemode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file is what ConnectUpstream does to the bytes an upstream sends,
// below the SDK: every message is bounded before it is buffered
// (MaxUpstreamMessageBytes, on every transport), and a tool result's
// structured content reaches the script with its numbers exact.

// MaxUpstreamMessageBytes bounds one message an upstream started by
// ConnectUpstream sends, on every transport: a line over stdio (the SDK's
// own bound, mcp.DefaultMaxLineLength, which this is), an HTTP response
// body of one message, one server-sent event. A message past it is not
// read further: the call it answers fails with UpstreamTooLarge, and the
// session ends (the next call starts another). Which call a message
// answers is not known before it is read, so every call in flight on
// that session fails with UpstreamTooLarge too.
const MaxUpstreamMessageBytes = mcp.DefaultMaxLineLength

// errUpstreamTooLarge is what reading an upstream's message past the
// bound returns to the SDK.
var errUpstreamTooLarge = errors.New("codemode: an upstream message is over MaxUpstreamMessageBytes")

// sdkFrameTooLarge is the text of the SDK's error for a stdio line past
// its bound (mcp.DefaultMaxLineLength), which it does not export; the
// test of a stdio upstream's oversized answer holds it.
const sdkFrameTooLarge = "inbound JSON-RPC frame exceeded the configured maximum line length"

// upstreamWire is what one session's transport observed.
type upstreamWire struct {
	tooLarge atomic.Bool // a message was over MaxUpstreamMessageBytes
	// spawn runs a function on a goroutine its Upstream's Close waits
	// for (Upstream.spawn).
	spawn func(func()) bool

	mu   sync.Mutex
	conn mcp.Connection // the session's connection, closed when a message is too large
}

// overflow records a message over the bound and ends the connection: the
// SDK does not end every transport's connection on a read error (an
// event stream's is retried), and every call in flight must end.
func (w *upstreamWire) overflow() {
	if w.tooLarge.Swap(true) {
		return
	}
	w.mu.Lock()
	conn := w.conn
	w.mu.Unlock()
	if conn != nil {
		// Not on the SDK's reading goroutine. Once Close has begun, it
		// ends the connection itself.
		w.spawn(func() { _ = conn.Close() })
	}
}

// overflowed reports whether a message of the session was over the
// bound; nil (NewUpstream's session) never is.
func (w *upstreamWire) overflowed() bool { return w != nil && w.tooLarge.Load() }

// wireTransport returns t with the bytes the upstream sends bounded, and
// its tool results' structured content kept exact (exactResult), as w
// observes; exact reports whether it knows t to do so. The SDK's
// transports are known: streamable HTTP and SSE (their HTTP client's
// response bodies), a byte stream (IOTransport, InMemoryTransport) and a
// command (CommandTransport), whose lines the SDK bounds at
// MaxUpstreamMessageBytes. Another transport's messages are the
// transport's own to bound, and reach the script as the SDK decodes them.
func wireTransport(t mcp.Transport, w *upstreamWire) (_ mcp.Transport, exact bool) {
	switch tt := t.(type) {
	case *mcp.StreamableClientTransport:
		c := *tt
		c.HTTPClient = boundClient(c.HTTPClient, w)
		// The events are bounded and rewritten in the body (wireBody),
		// which may make one longer; the SDK's bound stays a backstop.
		c.MaxEventSize = 4 * MaxUpstreamMessageBytes
		// Its connection must stay the SDK's own type (it follows the
		// session's protocol version): exactness is in the body.
		return &connTransport{Transport: &c, w: w}, true
	case *mcp.SSEClientTransport:
		c := *tt
		c.HTTPClient = boundClient(c.HTTPClient, w)
		c.MaxEventSize = 4 * MaxUpstreamMessageBytes
		return &connTransport{Transport: &c, w: w}, true
	case *mcp.IOTransport:
		c := *tt
		if c.MaxLineLength < 0 || c.MaxLineLength > MaxUpstreamMessageBytes {
			c.MaxLineLength = MaxUpstreamMessageBytes
		}
		return &connTransport{Transport: &c, w: w, wrap: true}, true
	case *mcp.CommandTransport, *mcp.InMemoryTransport:
		return &connTransport{Transport: t, w: w, wrap: true}, true
	}
	return &connTransport{Transport: t, w: w}, false
}

// connTransport keeps the connection of its transport in w (to end it on
// an overflow), wrapped in a wireConn when wrap is set.
type connTransport struct {
	mcp.Transport
	w    *upstreamWire
	wrap bool
}

func (t *connTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.w.mu.Lock()
	t.w.conn = conn
	t.w.mu.Unlock()
	if t.wrap {
		return &wireConn{Connection: conn, w: t.w}, nil
	}
	return conn, nil
}

// wireConn is the connection of a byte-stream transport, seen after the
// SDK decoded each message (its bound is the SDK's): it records the
// SDK's refusal of a line past its bound, and keeps the structured
// content of a tool result exact.
type wireConn struct {
	mcp.Connection
	w *upstreamWire
}

func (c *wireConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		if strings.Contains(err.Error(), sdkFrameTooLarge) {
			c.w.overflow()
		}
		return msg, err
	}
	if r, ok := msg.(*jsonrpc.Response); ok && r.Result != nil {
		if res, changed := exactResult(r.Result); changed {
			r.Result = res
		}
	}
	return msg, nil
}

// boundClient returns a copy of c (nil: http.DefaultClient) whose
// response bodies are wireBodies.
func boundClient(c *http.Client, w *upstreamWire) *http.Client {
	if c == nil {
		c = http.DefaultClient
	}
	cc := *c
	base := cc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	cc.Transport = &boundRoundTripper{base: base, w: w}
	return &cc
}

type boundRoundTripper struct {
	base http.RoundTripper
	w    *upstreamWire
}

func (b *boundRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	ct := resp.Header.Get("Content-Type")
	resp.Body = &wireBody{src: resp.Body, br: bufio.NewReaderSize(resp.Body, 64<<10), events: strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "text/event-stream"), w: b.w}
	resp.ContentLength = -1 // a rewritten message may differ in length
	return resp, nil
}

// wireBody is an upstream's HTTP response body as the SDK reads it: one
// message (a JSON body, an error's body), or a stream of server-sent
// events; each message is read at most MaxUpstreamMessageBytes into
// memory, past which the body fails with errUpstreamTooLarge, and the
// structured content of a tool result in it is kept exact.
type wireBody struct {
	src    io.ReadCloser
	br     *bufio.Reader
	events bool
	w      *upstreamWire

	out []byte // what is ready for Read
	err error  // once out is read
}

func (b *wireBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		if b.events {
			b.out, b.err = b.nextEvent()
		} else {
			b.out, b.err = b.whole()
		}
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}

func (b *wireBody) Close() error { return b.src.Close() }

// whole reads the body, one message.
func (b *wireBody) whole() ([]byte, error) {
	msg, err := io.ReadAll(io.LimitReader(b.br, MaxUpstreamMessageBytes+1))
	if err != nil {
		return msg, err
	}
	if len(msg) > MaxUpstreamMessageBytes {
		b.w.overflow()
		return nil, errUpstreamTooLarge
	}
	if out, changed := exactMessage(msg); changed {
		msg = out
	}
	return msg, io.EOF
}

// nextEvent reads the next event of the stream (its lines up to the
// blank line that ends it), with its data kept exact.
func (b *wireBody) nextEvent() ([]byte, error) {
	var lines [][]byte
	size := 0
	for {
		line, err := b.line(MaxUpstreamMessageBytes - size)
		if errors.Is(err, errUpstreamTooLarge) {
			b.w.overflow()
			return nil, err
		}
		size += len(line)
		if len(line) > 0 {
			lines = append(lines, line)
		}
		if err != nil {
			return exactEvent(lines), err
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return exactEvent(lines), nil
		}
	}
}

// line reads one line, with its "\n", of at most limit bytes.
func (b *wireBody) line(limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := b.br.ReadSlice('\n')
		if len(line)+len(chunk) > limit {
			return nil, errUpstreamTooLarge
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}

// exactEvent is an event's lines, its data kept exact: when its data is a
// tool result whose structured content exactResult rewrites, the data
// lines are one line of the rewritten message, where the first was.
func exactEvent(lines [][]byte) []byte {
	var data [][]byte
	first := -1
	for i, l := range lines {
		if v, ok := bytes.CutPrefix(l, []byte("data:")); ok {
			if first < 0 {
				first = i
			}
			data = append(data, bytes.TrimSpace(v))
		}
	}
	var out []byte
	if first >= 0 {
		if msg, changed := exactMessage(bytes.Join(data, []byte("\n"))); changed {
			for i, l := range lines {
				switch {
				case i == first:
					out = append(append(append(out, "data: "...), msg...), '\n')
				case !bytes.HasPrefix(l, []byte("data:")):
					out = append(out, l...)
				}
			}
			return out
		}
	}
	for _, l := range lines {
		out = append(out, l...)
	}
	return out
}

// exactMessage rewrites a JSON-RPC response (JSON text) whose result
// exactResult rewrites; changed is false for any other text.
func exactMessage(msg []byte) (_ []byte, changed bool) {
	t := bytes.TrimSpace(msg)
	if len(t) == 0 || t[0] != '{' {
		return msg, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(t, &m) != nil {
		return msg, false
	}
	res, ok := m["result"]
	if !ok {
		return msg, false
	}
	if m["result"], changed = exactResult(res); !changed {
		return msg, false
	}
	out, err := marshalRaw(m)
	if err != nil {
		return msg, false
	}
	return out, true
}

// exactResult rewrites a tool result's structuredContent as a JSON string
// holding its text, which the SDK's decoding (into an any, numbers as
// float64) keeps byte for byte; resultValue reads it back. changed is
// false for a result without structured content.
func exactResult(res json.RawMessage) (_ json.RawMessage, changed bool) {
	var r map[string]json.RawMessage
	if json.Unmarshal(res, &r) != nil {
		return res, false
	}
	sc, ok := r["structuredContent"]
	if !ok || string(bytes.TrimSpace(sc)) == "null" {
		return res, false
	}
	s, err := marshalRaw(string(sc))
	if err != nil {
		return res, false
	}
	r["structuredContent"] = s
	out, err := marshalRaw(r)
	if err != nil {
		return res, false
	}
	return out, true
}

// marshalRaw is json.Marshal without HTML escapes, which would only make
// the text longer.
func marshalRaw(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
