package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions configure [Server.HTTPHandler]. A nil *HTTPOptions means
// defaults.
type HTTPOptions struct {
	// AllowedOrigins are the origins (scheme://host[:port], as a browser
	// sends them in the Origin header) whose pages may call the server,
	// besides the loopback origins (http or https on localhost, 127.0.0.1
	// or [::1], any port). A request without an Origin header (not sent
	// by a browser page) is served; one from any other origin is refused
	// with 403 Forbidden, the MCP transports' defence against DNS
	// rebinding. Nil allows only the loopback origins.
	AllowedOrigins []string
	// Authenticate, when not nil, wraps the MCP handler after the Origin
	// check: where the command checks a tenant's key.
	Authenticate func(http.Handler) http.Handler
}

// sessionHeader and versionHeader are the streamable HTTP transport's
// headers.
const (
	sessionHeader = "Mcp-Session-Id"
	versionHeader = "Mcp-Protocol-Version"
	// sessionless is the protocol version from which MCP over HTTP has
	// no sessions.
	sessionless = "2026-07-28"
)

// HTTPHandler returns the server as streamable HTTP, stateful (one
// session per client, opened by its initialize request). Beyond the SDK's
// handler, it refuses a request from a foreign Origin (403), a body longer
// than [Server.MaxMessageBytes] (413), and a POST without an
// Mcp-Session-Id header that is not an initialize request (400, with a
// JSON-RPC -32600 error): MCP's streamable HTTP transport asks for both.
func (s *Server) HTTPHandler(opts *HTTPOptions) http.Handler {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	max := s.MaxMessageBytes()
	// The SDK's own bound (4 MiB by default) would refuse a call the
	// server's limits allow.
	var next http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.server }, &mcp.StreamableHTTPOptions{MaxRequestBodyBytes: max})
	next = requireSession(next)
	if o.Authenticate != nil {
		next = o.Authenticate(next)
	}
	allowed := slices.Clone(o.AllowedOrigins)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !allowedOrigin(origin, allowed) {
			http.Error(w, "mcpserver: forbidden: the request's Origin is not allowed", http.StatusForbidden)
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, max)
		}
		next.ServeHTTP(w, r)
	})
}

// allowedOrigin reports whether a page of origin may call the server.
func allowedOrigin(origin string, allowed []string) bool {
	if slices.Contains(allowed, origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Path != "" || u.User != nil {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// requireSession answers 400 to a POST that carries no session and does
// not open one: without it, the SDK would open a session for it and answer
// its request with an error of code 0 and status 200.
func requireSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get(sessionHeader) != "" || r.Header.Get(versionHeader) >= sessionless {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				http.Error(w, fmt.Sprintf("mcpserver: the request body is longer than %d bytes", tooLarge.Limit), http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "mcpserver: reading the request body failed", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		id, opens, ok := opensSession(body)
		if !ok || opens {
			next.ServeHTTP(w, r) // the SDK answers a body it cannot read
			return
		}
		bad := invalidRequest(id, "no session: send initialize first, then its Mcp-Session-Id with every request")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(bad.reply())
	})
}

// opensSession reads a POST's body: ok when it is one message or a batch
// of them, opens when one of them is an initialize request, and id the
// request's id when it is one request.
func opensSession(body []byte) (id json.RawMessage, opens, ok bool) {
	msgs, batch, bad := parseLine(bytes.TrimSpace(body))
	if bad != nil {
		return nil, false, false
	}
	for _, m := range msgs {
		if m.call && m.method == "initialize" {
			return nil, true, true
		}
	}
	if !batch && msgs[0].call {
		id, _ = json.Marshal(msgs[0].id.Raw())
	}
	return id, false, true
}
