package mcpserver

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// CodeRequestCancelled is the JSON-RPC error code of a call that ended
// because it was cancelled (the code the Language Server Protocol gives
// its RequestCancelled; JSON-RPC 2.0 and MCP define none). A client that
// cancelled with notifications/cancelled on a [StreamTransport] hears
// nothing, as MCP asks; over HTTP, where the request's stream needs an
// answer, the call is answered with this code.
const CodeRequestCancelled = -32800

// errCancelled is the answer to a call cancelled while it ran.
var errCancelled = &jsonrpc.Error{Code: CodeRequestCancelled, Message: "mcpserver: request cancelled"}

// maxSafeID is the largest integer a JSON number id can be for the SDK to
// answer with the same id (it reads a number as a float64).
const maxSafeID = 1 << 53

// message is one JSON-RPC message a line holds, as the SDK will read it.
type message struct {
	// id is the SDK's id of a request or a response; invalid for a
	// notification.
	id jsonrpc.ID
	// method is the method of a request or a notification.
	method string
	// call is true for a request (a method and an id).
	call bool
	// params are the params of a request or a notification.
	params json.RawMessage
}

// badMessage is the error answered to a line that is not a message the
// server takes. Its wording is fixed: it never echoes the line.
type badMessage struct {
	code int64
	// id is the id of the request as it was sent, when it could be read;
	// nil answers with a null id.
	id      json.RawMessage
	message string
}

// reply returns the JSON-RPC error response to the line.
func (b *badMessage) reply() []byte {
	id := b.id
	if id == nil {
		id = json.RawMessage("null")
	}
	type wireError struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}
	out, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   wireError       `json:"error"`
	}{"2.0", id, wireError{b.code, b.message}})
	if err != nil { // unreachable: id was checked to be a string or a number
		return []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"mcpserver: invalid request"}}`)
	}
	return out
}

func parseError() *badMessage {
	return &badMessage{code: jsonrpc.CodeParseError, message: "mcpserver: parse error: the line is not JSON text (UTF-8)"}
}

func invalidRequest(id json.RawMessage, why string) *badMessage {
	return &badMessage{code: jsonrpc.CodeInvalidRequest, id: id, message: "mcpserver: invalid request: " + why}
}

// parseLine reads one line of a stream (without its newline, not blank)
// as a JSON-RPC 2.0 message, or a batch of them. Every message it returns
// is one the SDK's reader accepts, with the id the SDK will see; a line it
// refuses has the error to answer (-32700 for a line that is not JSON,
// -32600 for JSON that is not a message).
func parseLine(line []byte) (msgs []message, batch bool, bad *badMessage) {
	if !utf8.Valid(line) || !json.Valid(line) {
		return nil, false, parseError()
	}
	if line[0] != '[' {
		m, bad := parseMessage(line)
		if bad != nil {
			return nil, false, bad
		}
		return []message{m}, false, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(line, &elems); err != nil {
		return nil, true, invalidRequest(nil, "the batch is not an array")
	}
	if len(elems) == 0 {
		return nil, true, invalidRequest(nil, "the batch is empty")
	}
	for _, e := range elems {
		m, bad := parseMessage(e)
		if bad != nil {
			// One error for the batch: the messages of a batch are
			// taken together or not at all.
			return nil, true, invalidRequest(nil, "a message of the batch is invalid")
		}
		msgs = append(msgs, m)
	}
	return msgs, true, nil
}

// parseMessage reads one JSON value (valid JSON) as a JSON-RPC 2.0
// message: an object with "jsonrpc": "2.0", an id (when present) that is
// a string or an integer, and either a string method (a request or a
// notification) or an id (a response).
func parseMessage(data []byte) (message, *badMessage) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		return message{}, invalidRequest(nil, "not a JSON object")
	}
	rawID, hasID := fields["id"]
	if hasID && !validID(rawID) {
		return message{}, invalidRequest(nil, "the id is not a string or an integer")
	}
	var id json.RawMessage
	if hasID {
		id = rawID
	}
	var version string
	if err := json.Unmarshal(fields["jsonrpc"], &version); err != nil || version != "2.0" {
		return message{}, invalidRequest(id, `"jsonrpc" is not "2.0"`)
	}
	rawMethod, hasMethod := fields["method"]
	if hasMethod {
		var method string
		if err := json.Unmarshal(rawMethod, &method); err != nil || bytes.Equal(bytes.TrimSpace(rawMethod), []byte("null")) {
			return message{}, invalidRequest(id, "the method is not a string")
		}
	} else if !hasID {
		return message{}, invalidRequest(nil, "neither a method nor an id")
	}
	// What the SDK refuses (too deep a nesting, say), the server answers
	// here rather than let the session end on it.
	decoded, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return message{}, invalidRequest(id, "the SDK cannot read the message")
	}
	switch d := decoded.(type) {
	case *jsonrpc.Request:
		return message{id: d.ID, method: d.Method, call: d.ID.IsValid(), params: d.Params}, nil
	case *jsonrpc.Response:
		return message{id: d.ID}, nil
	}
	return message{}, invalidRequest(id, "the SDK cannot read the message")
}

// validID reports whether raw is an id the server can answer with the
// same id: a string, or an integer of at most 2^53 in magnitude. MCP
// refuses null; JSON-RPC discourages fractions.
func validID(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		return json.Unmarshal(raw, &s) == nil
	case c == '-' || (c >= '0' && c <= '9'):
		f, err := strconv.ParseFloat(string(raw), 64)
		return err == nil && f == math.Trunc(f) && math.Abs(f) <= maxSafeID
	}
	return false
}
