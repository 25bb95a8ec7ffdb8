package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/sandbank/sandbank/mcpserver"
)

// lockedBuffer is a bytes.Buffer safe for concurrent writes and reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// FuzzStreamTransport reads any bytes as a client's stream, followed by a
// ping on a line of its own: the reader never fails (the SDK's session
// would end on it), the stream ends with io.EOF after the ping, every
// request read is answered, and every line the transport writes is a
// JSON-RPC 2.0 response.
func FuzzStreamTransport(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`not json`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"p\":\"\xff\"}",
		`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
		`[]`,
		`{"jsonrpc":"1.0","id":3,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`42`,
		`{"jsonrpc":"2.0","id":7,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":7,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":9,"method":"ping","params":` + strings.Repeat("[", 1100) + strings.Repeat("]", 1100) + `}`,
		`{"jsonrpc":"2.0","id":"` + strings.Repeat("x", 600) + `","method":"ping"}`,
	} {
		f.Add([]byte(seed))
	}
	const last = "fuzz-last-ping"
	f.Fuzz(func(t *testing.T, data []byte) {
		input := append(append(bytes.Clone(data), '\n'), `{"jsonrpc":"2.0","id":"`+last+`","method":"ping"}`+"\n"...)
		var out lockedBuffer
		conn, err := (&mcpserver.StreamTransport{Reader: bytes.NewReader(input), Writer: &out, MaxMessageBytes: 512}).Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var lastRead *jsonrpc.Request
		for {
			msg, err := conn.Read(context.Background())
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("the reader failed: %v", err)
			}
			req, ok := msg.(*jsonrpc.Request)
			if !ok {
				continue
			}
			lastRead = req
			if req.IsCall() {
				if err := conn.Write(context.Background(), &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)}); err != nil {
					t.Fatalf("answering %v: %v", req.ID.Raw(), err)
				}
			}
		}
		// The fuzzed bytes may hold the same id in flight, or spell it
		// with escapes; then the ping may be refused, rightly.
		if !bytes.Contains(data, []byte(`\u`)) && !bytes.Contains(data, []byte("last")) {
			if lastRead == nil || lastRead.ID.Raw() != any(last) {
				t.Fatalf("the ping after the fuzzed bytes was not read last (%v)", lastRead)
			}
		}
		for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
			if line == "" {
				continue
			}
			var r struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
			}
			if err := json.Unmarshal([]byte(line), &r); err != nil && !strings.HasPrefix(line, "[") {
				t.Fatalf("the transport wrote a line that is not a response: %q", line)
			} else if err == nil && r.JSONRPC != "2.0" {
				t.Fatalf("the transport wrote a line that is not JSON-RPC 2.0: %q", line)
			}
		}
	})
}
