//go:build cgo

package wasmtime_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/backends/quickjs/wasmtime"
	"github.com/sandbank/sandbank/spi"
)

// TestDeepInputSameVerdictOnEveryQuickJSEngine: the same deeply nested
// input gets the same outcome kind on the three QuickJS engines (wazero
// parked, wazero fresh, wasmtime). Issue 14: at 3,000 deep wasmtime's
// native stack ran out first and the run failed untyped, where wazero
// parsed it. The depths either side of where the guest's own C stack
// overflows (3,687/3,688 for arrays, 3,643/3,644 for objects on this
// build) pin that the guest's stack, the same on every engine, is the
// bound.
func TestDeepInputSameVerdictOnEveryQuickJSEngine(t *testing.T) {
	engines := map[string]spi.Backend{}
	for name, mk := range map[string]func() (spi.Backend, error){
		"quickjs": func() (spi.Backend, error) {
			return quickjs.New(&quickjs.Options{ColdStartAllowance: 10 * time.Minute})
		},
		"quickjs-fresh": func() (spi.Backend, error) {
			return quickjs.New(&quickjs.Options{Mode: quickjs.ModeFresh, ColdStartAllowance: 10 * time.Minute})
		},
		"wasmtime": func() (spi.Backend, error) {
			return wasmtime.New(&wasmtime.Options{ColdStartAllowance: 10 * time.Minute})
		},
	} {
		b, err := mk()
		require.NoError(t, err, name)
		t.Cleanup(func() { _ = b.(interface{ Close() error }).Close() })
		engines[name] = b
	}
	nest := map[string]func(int) string{
		"array":  func(d int) string { return strings.Repeat("[", d) + strings.Repeat("]", d) },
		"object": func(d int) string { return strings.Repeat(`{"a":`, d) + "1" + strings.Repeat("}", d) },
	}
	for _, tc := range []struct {
		shape string
		depth int
		want  spi.OutcomeKind // 0: only the same on every engine
	}{
		{"array", 1_000, spi.KindOK}, {"object", 1_000, spi.KindOK},
		{"array", 3_000, spi.KindOK}, {"object", 3_000, spi.KindOK},
		{"array", 3_687, 0}, {"array", 3_688, 0},
		{"object", 3_643, 0}, {"object", 3_644, 0},
		{"array", 10_000, spi.KindInputTooLarge}, {"object", 10_000, spi.KindInputTooLarge},
		{"array", 100_000, spi.KindInputTooLarge}, {"object", 100_000, spi.KindInputTooLarge},
	} {
		t.Run(fmt.Sprintf("%s_%d", tc.shape, tc.depth), func(t *testing.T) {
			input := nest[tc.shape](tc.depth)
			kinds := map[string]spi.OutcomeKind{}
			for name, b := range engines {
				out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(`typeof input`), Input: []byte(input), Limits: spi.Limits{WallClock: 20 * time.Second}})
				require.NoError(t, err, "%s: an untyped error", name)
				kinds[name] = out.Kind
			}
			assert.Equal(t, kinds["quickjs"], kinds["quickjs-fresh"], "%v", kinds)
			assert.Equal(t, kinds["quickjs"], kinds["wasmtime"], "%v", kinds)
			if tc.want != 0 {
				assert.Equal(t, tc.want, kinds["wasmtime"], "%v", kinds)
			}
		})
	}
}
