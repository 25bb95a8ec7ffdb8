package conformance

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/spi"
)

// leaksRandomness declares Deterministic but lets real randomness reach
// the script: each run's Math.random answers a number drawn from
// crypto/rand.
type leaksRandomness struct{ *goja.Backend }

func (l leaksRandomness) Capabilities() spi.Capabilities {
	caps := l.Backend.Capabilities()
	caps.Deterministic = true
	return caps
}

func (l leaksRandomness) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return spi.Outcome{}, err
	}
	r := float64(binary.BigEndian.Uint64(b[:])>>11) / (1 << 53)
	req.Script = append([]byte("Math.random = () => "+strconv.FormatFloat(r, 'g', -1, 64)+";\n"), req.Script...)
	return l.Backend.Evaluate(ctx, req)
}

func runDeterministic(t *testing.T, f spi.Factory) CaseResult {
	t.Helper()
	rep, err := Check(context.Background(), f, &Options{Cases: []string{"deterministic"}})
	require.NoError(t, err)
	require.Len(t, rep.Cases, 1)
	return rep.Cases[0]
}

// TestDeterministicPassesOnQuickJS: QuickJS's fake clock and seeded
// random source make durable_replay's runs the same, and its replay the
// live value.
func TestDeterministicPassesOnQuickJS(t *testing.T) {
	c := runDeterministic(t, func() (spi.Backend, error) { return quickjs.New(nil) })
	assert.Equal(t, StatusPass, c.Status, c.Reason)
}

// TestDeterministicCatchesARealClock: a backend that declares
// Deterministic but lets the machine's clock and randomness through
// fails; one that does not declare it is skipped.
func TestDeterministicCatchesARealClock(t *testing.T) {
	c := runDeterministic(t, func() (spi.Backend, error) {
		b, err := goja.New(nil)
		return leaksRandomness{b}, err
	})
	assert.Equal(t, StatusFail, c.Status)
	assert.Contains(t, c.Reason, "a real clock or real randomness reached the script?")

	c = runDeterministic(t, func() (spi.Backend, error) { return goja.New(nil) })
	assert.Equal(t, StatusSkip, c.Status)
	assert.Contains(t, c.Reason, "gated by Deterministic")
}
