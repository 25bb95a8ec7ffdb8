package guest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"

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
