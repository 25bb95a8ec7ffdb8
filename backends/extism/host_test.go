package extism

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// hostFunc adapts a function to spi.Host.
type hostFunc func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)

func (f hostFunc) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	return f(ctx, name, args)
}

func TestHostCallABI(t *testing.T) {
	b := newTestBackend(t, nil)
	var calls []string
	host := hostFunc(func(_ context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
		calls = append(calls, name+" "+string(args))
		return json.RawMessage(`{"n":` + string(rune('0'+len(calls))) + `}`), nil
	})
	out, err := b.Evaluate(context.Background(), spi.Request{Script: fixture(t, "host_calls"), Input: json.RawMessage(`{"q":"é"}`), Limits: testLimits, Host: host})
	require.NoError(t, err)
	assert.Equal(t, spi.OK(json.RawMessage(`{"n":2}`)), out, "the second answer's bytes are the output")
	assert.Equal(t, []string{`probe {"q":"é"}`, `probe {"n":1}`}, calls, "names and arguments as kernel blocks, in order")

	failing := hostFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return nil, errors.New("no data ✓")
	})
	out, err = b.Evaluate(context.Background(), spi.Request{Script: fixture(t, "host_calls"), Input: json.RawMessage(`1`), Limits: testLimits, Host: failing})
	require.NoError(t, err)
	assert.Equal(t, spi.Threw("", "no data ✓"), out, "a failure's message, through error, set as the plugin's error")
}

func TestHostCallWithoutHostFunctions(t *testing.T) {
	b := newTestBackend(t, nil)
	out, err := eval(t, b, fixture(t, "host_calls"), `1`, testLimits)
	require.NoError(t, err)
	assert.Equal(t, spi.Threw("", msgNoHost), out, "a module importing sandbank:host runs; every call fails")
}
