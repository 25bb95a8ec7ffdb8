package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StreamTransport is an [mcp.Transport] over a byte stream of
// newline-delimited JSON-RPC messages, such as a process's standard input
// and output ('sandbank mcp'). Unlike the SDK's IOTransport, one bad line
// does not end the session:
//
//   - a line that is not JSON (or not UTF-8) is answered with a -32700
//     parse error, id null;
//   - JSON that is not a JSON-RPC 2.0 message (not an object, "jsonrpc"
//     not "2.0", an id that is null, an object or a fraction, a method
//     that is not a string, a request id already in flight) is answered
//     with a -32600 invalid request, with the request's id when it could
//     be read;
//   - a line longer than MaxMessageBytes is skipped, never held whole, and
//     answered with a -32600;
//   - a batch (a JSON array) is served only in a session whose protocol
//     version has batches (2025-03-26 and older); MCP has none since
//     2025-06-18, so there it is answered with a -32600.
//
// The session goes on after each of them. At the end of the input, every
// request already read is answered before the session ends. A request the
// client cancelled (notifications/cancelled) is not answered, as MCP asks.
type StreamTransport struct {
	// Reader is the stream of messages from the client; Writer, to it.
	// Neither is closed.
	Reader io.Reader
	Writer io.Writer
	// MaxMessageBytes bounds a line. Zero means mcp.DefaultMaxLineLength
	// (16 MiB); [Server.MaxMessageBytes] is the bound a server's own
	// limits need.
	MaxMessageBytes int64
}

// batchesDropped is the protocol version from which MCP has no JSON-RPC
// batches.
const batchesDropped = "2025-06-18"

// Connect implements [mcp.Transport].
func (t *StreamTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	if t.Reader == nil || t.Writer == nil {
		return nil, errors.New("mcpserver: StreamTransport needs a Reader and a Writer")
	}
	limit := t.MaxMessageBytes
	if limit <= 0 {
		limit = mcp.DefaultMaxLineLength
	}
	pr, pw := io.Pipe()
	out := &lineWriter{w: t.Writer}
	// The SDK's connection reads only the lines checked here, so it
	// never meets one it would end the session on; the lines are
	// bounded here, so it needs no bound of its own.
	inner, err := (&mcp.IOTransport{Reader: pr, Writer: out, MaxLineLength: -1}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	c := &streamConn{inner: inner, out: out, feed: pw, pending: map[jsonrpc.ID]bool{}, cancelled: map[jsonrpc.ID]bool{}, batched: map[jsonrpc.ID]bool{}}
	c.idle = sync.NewCond(&c.mu)
	go c.read(t.Reader, limit)
	return c, nil
}

// streamConn is the connection of a StreamTransport: the SDK's own
// connection, fed only with the lines read and checked here.
type streamConn struct {
	inner mcp.Connection
	out   *lineWriter
	feed  *io.PipeWriter

	mu   sync.Mutex
	idle *sync.Cond // signalled when pending empties, and on close
	// pending are the requests fed to the SDK and not yet answered.
	pending map[jsonrpc.ID]bool
	// cancelled are the pending requests the client cancelled: their
	// answer is not sent.
	cancelled map[jsonrpc.ID]bool
	// batched are the pending requests that came in a batch: their
	// answers are sent together, a cancelled one included.
	batched map[jsonrpc.ID]bool
	// initialize is the id of the initialize request; version, the
	// protocol version its answer chose.
	initialize jsonrpc.ID
	version    string
	closed     bool
}

// read reads lines until the end of r, answers the bad ones and feeds the
// good ones to the SDK; at the end of the input it waits for every request
// fed to be answered, then ends the SDK's input.
func (c *streamConn) read(r io.Reader, limit int64) {
	br := bufio.NewReaderSize(r, 64<<10)
	var err error
	for err == nil {
		var line []byte
		var tooLong bool
		line, tooLong, err = readLine(br, limit)
		switch {
		case tooLong:
			c.answer(invalidRequest(nil, fmt.Sprintf("the message is longer than %d bytes", limit)))
		case len(line) > 0:
			if ferr := c.take(line); ferr != nil {
				return // the connection is closed
			}
		}
	}
	c.mu.Lock()
	for len(c.pending) > 0 && !c.closed {
		c.idle.Wait()
	}
	c.mu.Unlock()
	if errors.Is(err, io.EOF) {
		err = nil
	}
	_ = c.feed.CloseWithError(err) // nil: io.EOF to the SDK
}

// readLine returns the next line of br without its newline and the
// whitespace around it, holding at most limit bytes of it: tooLong
// reports a longer line, whose bytes were skipped. err is the reader's
// error (io.EOF at the end).
func readLine(br *bufio.Reader, limit int64) (line []byte, tooLong bool, err error) {
	for {
		chunk, rerr := br.ReadSlice('\n')
		if !tooLong {
			if int64(len(line))+int64(len(chunk)) > limit+2 { // +2: "\r\n"
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(rerr, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimSpace(line)
		if tooLong {
			line = nil
		} else if int64(len(line)) > limit {
			tooLong, line = true, nil
		}
		return line, tooLong, rerr
	}
}

// take answers a bad line, or feeds a good one to the SDK. Its error means
// the SDK's side is closed.
func (c *streamConn) take(line []byte) error {
	msgs, batch, bad := parseLine(line)
	if bad != nil {
		c.answer(bad)
		return nil
	}
	c.mu.Lock()
	if batch && (c.version == "" || c.version >= batchesDropped) {
		c.mu.Unlock()
		c.answer(invalidRequest(nil, "JSON-RPC batches are not part of MCP since "+batchesDropped))
		return nil
	}
	seen := map[jsonrpc.ID]bool{}
	for _, m := range msgs {
		if m.call && (c.pending[m.id] || seen[m.id]) {
			c.mu.Unlock()
			var id json.RawMessage
			if !batch {
				id, _ = json.Marshal(m.id.Raw())
			}
			c.answer(invalidRequest(id, "the request id is already in flight"))
			return nil
		}
		seen[m.id] = m.call
	}
	for _, m := range msgs {
		switch {
		case m.call:
			c.pending[m.id] = true
			if batch {
				c.batched[m.id] = true
			}
			if m.method == "initialize" {
				c.initialize = m.id
			}
		case m.method == "notifications/cancelled":
			var p struct {
				RequestID any `json:"requestId"`
			}
			if json.Unmarshal(m.params, &p) == nil {
				if id, err := jsonrpc.MakeID(p.RequestID); err == nil && c.pending[id] && !c.batched[id] {
					c.cancelled[id] = true
				}
			}
		}
	}
	c.mu.Unlock()
	_, err := c.feed.Write(append(line, '\n'))
	return err
}

// answer writes the error reply to a bad line.
func (c *streamConn) answer(bad *badMessage) {
	_, _ = c.out.Write(append(bad.reply(), '\n'))
}

// Read implements [mcp.Connection].
func (c *streamConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	return c.inner.Read(ctx)
}

// Write implements [mcp.Connection]: it writes a message, unless it
// answers a request the client cancelled, and keeps count of the requests
// still to answer.
func (c *streamConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return c.inner.Write(ctx, msg)
	}
	c.mu.Lock()
	drop := c.cancelled[resp.ID]
	if resp.ID.IsValid() && resp.ID == c.initialize && resp.Error == nil {
		var r struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if json.Unmarshal(resp.Result, &r) == nil {
			c.version = r.ProtocolVersion
		}
	}
	c.mu.Unlock()
	var err error
	if !drop {
		err = c.inner.Write(ctx, msg)
	}
	c.mu.Lock()
	delete(c.pending, resp.ID)
	delete(c.cancelled, resp.ID)
	delete(c.batched, resp.ID)
	if len(c.pending) == 0 {
		c.idle.Broadcast()
	}
	c.mu.Unlock()
	return err
}

// Close implements [mcp.Connection].
func (c *streamConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.idle.Broadcast()
	c.mu.Unlock()
	err := c.inner.Close()
	_ = c.feed.CloseWithError(mcp.ErrConnectionClosed)
	return err
}

// SessionID implements [mcp.Connection].
func (c *streamConn) SessionID() string { return "" }

// lineWriter writes each message whole: the SDK's answers and the
// transport's own never interleave.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close does nothing: the stream is not the transport's to close.
func (*lineWriter) Close() error { return nil }
