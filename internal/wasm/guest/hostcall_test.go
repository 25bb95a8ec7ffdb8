package guest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type hostFunc func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)

func (f hostFunc) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	return f(ctx, name, args)
}

func TestStdinServesHostCalls(t *testing.T) {
	out := NewStdout(testNonce, 1<<20, nil)
	var seen []string
	host := hostFunc(func(_ context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
		seen = append(seen, name+" "+string(args))
		if name == "bad" {
			return nil, errors.New("no ✓")
		}
		return json.RawMessage(`{"ok":"é"}`), nil
	})
	in := NewStdin(context.Background(), []byte("payload"), out, host)
	buf := make([]byte, 64)
	n, err := in.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "payload", string(buf[:n]))

	n, err = in.Read(buf)
	assert.Equal(t, 0, n)
	assert.Equal(t, io.EOF, err, "no call waiting: end of input")

	_, _ = out.Write([]byte("noise " + frame(testNonce, 'S', "") + frame(testNonce, 'H', `["probe","[1,\"😀\"]"]`)))
	n, err = in.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "O11\n{\"ok\":\"é\"}", string(buf[:n]))
	_, ok := out.TakeHostCall()
	assert.False(t, ok, "the record was taken")
	assert.True(t, out.Started(), "taking a call leaves the rest of the stream")

	_, _ = out.Write([]byte(frame(testNonce, 'H', `["bad","null"]`)))
	n, err = in.Read(buf[:3])
	require.NoError(t, err)
	assert.Equal(t, "F6\n", string(buf[:n]), "a reply is served across reads")
	n, err = in.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "no ✓", string(buf[:n]))
	assert.Equal(t, []string{`probe [1,"😀"]`, `bad null`}, seen)

	_, _ = out.Write([]byte(frame("fedcba9876543210fedcba9876543210", 'H', `["probe","1"]`)))
	n, err = in.Read(buf)
	assert.Equal(t, io.EOF, err, "a record without the run's nonce is no call: %q", buf[:n])
}

func TestStdinWithoutHost(t *testing.T) {
	out := NewStdout(testNonce, 1<<20, nil)
	_, _ = out.Write([]byte(frame(testNonce, 'H', `["probe","1"]`)))
	in := NewStdin(context.Background(), nil, out, nil)
	_, err := in.Read(make([]byte, 8))
	assert.Equal(t, io.EOF, err)
}

// starterHost answers each call when the test says, in any order.
type starterHost struct {
	hostFunc
	mu    sync.Mutex
	calls map[string]func(json.RawMessage, error) // by argument
	now   map[string]error                        // answered as they start
	seen  []string
}

func (h *starterHost) Start(_ context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) {
	h.mu.Lock()
	h.seen = append(h.seen, name+" "+string(args))
	h.calls[string(args)] = done
	err, now := h.now[string(args)]
	h.mu.Unlock()
	if now {
		done(json.RawMessage(`"`+string(args)+`"`), err)
	}
}

func (h *starterHost) answer(arg string, text string, err error) {
	h.mu.Lock()
	done := h.calls[arg]
	h.mu.Unlock()
	done(json.RawMessage(text), err)
}

// Calls written with an id before one read are all started at once, in
// the order written; their answers are served as one batch, in the order
// they arrived, each with its id.
func TestStdinBatchesConcurrentCalls(t *testing.T) {
	out := NewStdout(testNonce, 1<<20, nil)
	h := &starterHost{calls: map[string]func(json.RawMessage, error){}, now: map[string]error{"1": errors.New("no ✓"), "3": nil}}
	in := NewStdin(context.Background(), nil, out, h)
	_, _ = out.Write([]byte(frame(testNonce, 'H', "0:1\n\"a\"") + frame(testNonce, 'H', "1:2\n\"b\"") + frame(testNonce, 'H', "2:3\n\"a\"")))
	buf := make([]byte, 256)
	n, err := in.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "B2\nF0:6\nno ✓O2:3\n\"3\"", string(buf[:n]), "the answers that arrived, in arrival order")
	assert.Equal(t, []string{"a 1", "b 2", "a 3"}, h.seen, "started in the order written")

	got := make(chan string, 1)
	go func() {
		n, err := in.Read(buf)
		assert.NoError(t, err)
		got <- string(buf[:n])
	}()
	h.answer("2", `{"x":[]}`, nil)
	select {
	case s := <-got:
		assert.Equal(t, "B1\nO1:8\n{\"x\":[]}", s, "a read waits for the next answer")
	case <-time.After(time.Minute):
		t.Fatal("the read did not return")
	}
	_, err = in.Read(buf)
	assert.Equal(t, io.EOF, err, "no call waiting: end of input")
}

// A read waiting for answers ends when the run's context is done.
func TestStdinWaitEndsWithTheRun(t *testing.T) {
	out := NewStdout(testNonce, 1<<20, nil)
	h := &starterHost{calls: map[string]func(json.RawMessage, error){}, now: map[string]error{}}
	ctx, cancel := context.WithCancel(context.Background())
	in := NewStdin(ctx, nil, out, h)
	_, _ = out.Write([]byte(frame(testNonce, 'H', "0:1\n\"a\"") + frame(testNonce, 'H', "1:2\n\"a\"")))
	go cancel()
	_, err := in.Read(make([]byte, 8))
	assert.Equal(t, io.EOF, err)
}

// The only call in flight is made with Call, on the reader's goroutine.
func TestStdinOneCallInFlightIsMadeInline(t *testing.T) {
	out := NewStdout(testNonce, 1<<20, nil)
	h := &starterHost{calls: map[string]func(json.RawMessage, error){}, now: map[string]error{},
		hostFunc: func(_ context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`[` + string(args) + `]`), nil
		}}
	in := NewStdin(context.Background(), nil, out, h)
	_, _ = out.Write([]byte(frame(testNonce, 'H', "3:7\n\"a\"")))
	buf := make([]byte, 64)
	n, err := in.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "B1\nO3:3\n[7]", string(buf[:n]))
	assert.Empty(t, h.seen, "not started: called")
}

func TestDecodeCall(t *testing.T) {
	for _, tc := range []struct {
		body, name, args string
		id               int64
		bad              bool
	}{
		{body: `["probe","[1]"]`, name: "probe", args: "[1]", id: -1},
		{body: "12:{\"a\":\"x\\ny\"}\n\"fetch_rows\"", name: "fetch_rows", args: `{"a":"x\ny"}`, id: 12},
		{body: "0:null\n\"weird\\nname ✓ \\ud800\"", name: "weird\nname ✓ \ufffd", args: "null", id: 0},
		{body: "0:null\nbare", id: 0, bad: true},
		{body: `["probe"]`, id: -1, bad: true},
		{body: "x:1\na", id: -1, bad: true},
		{body: ":1\na", id: -1, bad: true},
		{body: "-1:1\na", id: -1, bad: true},
		{body: "1234567890123456:1\na", id: -1, bad: true},
		{body: "3:1", id: 3, bad: true},
		{body: "", id: -1, bad: true},
	} {
		name, args, id, err := decodeCall([]byte(tc.body))
		assert.Equal(t, tc.id, id, tc.body)
		if tc.bad {
			assert.Error(t, err, tc.body)
			continue
		}
		require.NoError(t, err, tc.body)
		assert.Equal(t, tc.name, name)
		assert.Equal(t, tc.args, string(args))
	}
}
