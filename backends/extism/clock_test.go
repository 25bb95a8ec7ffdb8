package extism

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// steppingClock is a clock that moves step forward at every reading.
func steppingClock(step time.Duration) func() time.Time {
	var mu sync.Mutex
	t := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(step)
		return t
	}
}

// TestLateValueIsTheWallClockLimit: a call that ended after its wall clock
// (here the clock says so: every reading is 40 minutes on, so the
// instantiation used 40 of the 60 minutes and the call took 40 of the 20
// left) never delivers its value, even though the SDK's timer never fired
// (issue 14). A call within its clock delivers it.
func TestLateValueIsTheWallClockLimit(t *testing.T) {
	limits := spi.Limits{WallClock: time.Hour, MemoryBytes: 32 << 20}
	b := newTestBackend(t, nil)
	b.now = steppingClock(40 * time.Minute)
	got, err := eval(t, b, fixture(t, "echo"), `{"ok":true}`, limits)
	require.NoError(t, err)
	assert.Equal(t, spi.Limited(spi.LimitWallClock), got)

	b.now = steppingClock(time.Nanosecond)
	got, err = eval(t, b, fixture(t, "echo"), `{"ok":true}`, limits)
	require.NoError(t, err)
	assert.Equal(t, spi.OK(json.RawMessage(`{"ok":true}`)), got)
}

// TestStartFunctionIsBoundedByTheWallClock: a module whose start function
// never returns (it runs while the module is instantiated, before the
// export is called) is stopped by the wall clock and reported as the
// wall-clock limit (issue 14: it ran for the effect's whole grace, then
// failed untyped). The watchdog is the wall clock plus 10 s, for a loaded
// machine.
func TestStartFunctionIsBoundedByTheWallClock(t *testing.T) {
	b := newTestBackend(t, nil)
	limits := spi.Limits{WallClock: time.Second, MemoryBytes: 32 << 20}
	watchdog(t, limits.WallClock+10*time.Second, func() {
		got, err := eval(t, b, testdata(t, "start_spins"), `{}`, limits)
		require.NoError(t, err)
		assert.Equal(t, spi.Limited(spi.LimitWallClock), got)
	})
}

// TestDeepOutputIsHandedOver: output nested past encoding/json's 10,000
// levels is valid JSON text, handed to the effect as it is (the effect
// refuses it with a typed limit naming the depth); text that is not JSON,
// however deep, is still the plugin's OutputError.
func TestDeepOutputIsHandedOver(t *testing.T) {
	b := newTestBackend(t, nil)
	for _, depth := range []int{10_001, 20_000} {
		deep := strings.Repeat("[", depth) + strings.Repeat("]", depth)
		got, err := eval(t, b, fixture(t, "echo"), deep, testLimits)
		require.NoError(t, err)
		assert.Equal(t, spi.OK(json.RawMessage(deep)), got, "depth %d", depth)
	}
	broken := strings.Repeat("[", 20_000) + strings.Repeat("]", 19_999)
	got, err := eval(t, b, fixture(t, "echo"), broken, testLimits)
	require.NoError(t, err)
	assert.Equal(t, spi.KindThrew, got.Kind)
	assert.Equal(t, NameOutputError, got.Name)
}

func TestIsJSONText(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{`1`, true},
		{` {"a":[1,2,{"b":null}]} `, true},
		{`1e400`, true},
		{strings.Repeat("[", 10_001) + strings.Repeat("]", 10_001), true},
		{strings.Repeat(`{"a":`, 10_001) + "1" + strings.Repeat("}", 10_001), true},
		{``, false},
		{`1 2`, false},
		{`[1,]`, false},
		{`{"a"}`, false},
		{strings.Repeat("[", 10_001) + strings.Repeat("]", 10_002), false},
		{strings.Repeat("[", 10_001) + "1 2" + strings.Repeat("]", 10_001), false},
		{strings.Repeat("[", 10_001), false},
	} {
		assert.Equal(t, tc.want, isJSONText([]byte(tc.text)), "%.40q", tc.text)
	}
}
