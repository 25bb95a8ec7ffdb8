package quickjs_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// Calls issued in one turn whose records together outgrow what the host
// keeps of stdout are all delivered: the wrapper sends its records before
// they pile up (unsentUnits), so none is dropped.
func TestHostCallsOfOneTurnOutgrowingStdout(t *testing.T) {
	const calls, size = 40, 1_000_000
	for _, mode := range []quickjs.Mode{quickjs.ModeParked, quickjs.ModeFresh} {
		t.Run(strconv.Itoa(int(mode)), func(t *testing.T) {
			be, err := quickjs.New(&quickjs.Options{Mode: mode})
			require.NoError(t, err)
			t.Cleanup(func() { _ = be.Close() })
			e, err := effect.New(new(storage.MemoryStore), be, &effect.Options{Limits: spi.Limits{WallClock: time.Minute, MemoryBytes: 8 << 20}})
			require.NoError(t, err)
			script := []byte(`const s = "x".repeat(` + strconv.Itoa(size) + `);
const a = [];
for (let i = 0; i < ` + strconv.Itoa(calls) + `; i++) a.push(host.size(s));
(await Promise.all(a)).reduce((x, y) => x + y, 0)`)
			measure := func(_ context.Context, args json.RawMessage) (any, error) { return len(args), nil }
			got, err := e.Evaluate(context.Background(), effect.Call{Source: script, Host: effect.HostFuncs{"size": measure}})
			require.NoError(t, err)
			assert.Equal(t, strconv.Itoa(calls*(size+2)), string(got))
		})
	}
}

// A host function name the broker does not know, however strange its
// text, is a catchable error with the broker's message.
func TestHostCallStrangeNameIsCatchable(t *testing.T) {
	be, err := quickjs.New(nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = be.Close() })
	e, err := effect.New(new(storage.MemoryStore), be, nil)
	require.NoError(t, err)
	script := []byte(`const out = [];
for (const name of ["a\nb", "\ud800", "x:1", "ok"]) {
  try { out.push(await host[name](1)); } catch (e) { out.push(e.message); }
}
out`)
	ok := func(context.Context, json.RawMessage) (any, error) { return "fine", nil }
	got, err := e.Evaluate(context.Background(), effect.Call{Source: script, Host: effect.HostFuncs{"ok": ok}})
	require.NoError(t, err)
	var out []string
	require.NoError(t, json.Unmarshal(got, &out))
	require.Len(t, out, 4)
	for _, m := range out[:3] {
		assert.Contains(t, m, "effect: unknown host function")
	}
	assert.Equal(t, "fine", out[3])
}
