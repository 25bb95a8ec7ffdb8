package server

import (
	"io"
	"net/http"
	"sync/atomic"
)

// bodyGuard is a request's body, bounded, remembering whether it was read
// to its end. A response written before the end of its request's body
// (a refusal before reading it, a body over the bound, a body abandoned
// part way) closes the connection: what is left of the body on the wire
// must never be read as the next request, and draining it would cost a
// refused caller's bytes. The middleware installs it for every request
// with a body, so no handler needs to care.
type bodyGuard struct {
	body io.ReadCloser // bounded
	own  io.ReadCloser // the request's own body
	read atomic.Bool   // the body was read to its end
}

// guardBody bounds r's body to limit bytes and returns its guard, or nil
// for a request without a body. w must be the connection's own
// ResponseWriter, so that net/http learns of a body over the bound
// (http.MaxBytesReader tells it).
func guardBody(w http.ResponseWriter, r *http.Request, limit int64) *bodyGuard {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	g := &bodyGuard{body: http.MaxBytesReader(w, r.Body, limit), own: r.Body}
	r.Body = g
	return g
}

func (g *bodyGuard) Read(p []byte) (int, error) {
	n, err := g.body.Read(p)
	if err == io.EOF {
		g.read.Store(true)
	}
	return n, err
}

func (g *bodyGuard) Close() error { return g.body.Close() }

// release gives r its own body back once the handler is done, so that
// net/http, closing the connection, sees what is left of it and lingers
// before closing a connection with many unread bytes (a client still
// sending then reads its answer instead of a reset).
func (g *bodyGuard) release(r *http.Request) {
	if g != nil {
		r.Body = g.own
	}
}

// beforeResponse closes the connection after the response unless the
// body was read to its end. It runs before the response's header is
// written.
func (g *bodyGuard) beforeResponse(h http.Header) {
	if g != nil && !g.read.Load() {
		h.Set("Connection", "close")
	}
}
