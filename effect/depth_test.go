package effect

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/record"
)

func nested(open, close string, depth int) string {
	return strings.Repeat(open, depth) + "1" + strings.Repeat(close, depth)
}

// TestOutputDepth: one rule on every engine. A backend hands the text as
// OK; the effect refuses a result nested past MaxOutputDepth as typed
// limitExceeded (output) naming the depth limit, and accepts one at it.
func TestOutputDepth(t *testing.T) {
	cases := []struct {
		name  string
		value string
		ok    bool
	}{
		{"arrays at the limit", nested("[", "]", MaxOutputDepth), true},
		{"objects at the limit", nested(`{"a":`, "}", MaxOutputDepth), true},
		{"arrays one past", nested("[", "]", MaxOutputDepth+1), false},
		{"objects one past", nested(`{"a":`, "}", MaxOutputDepth+1), false},
		{"mixed, far past", nested(`[{"k":`, "}]", 20000), false},
		{"brackets in a string do not count", `"` + strings.Repeat("[", 3*MaxOutputDepth) + `"`, true},
		{"escaped quote does not end the string", `["\"` + strings.Repeat("[", 2*MaxOutputDepth) + `"]`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fakebackend.Return(okOutcome(tc.value)), &Options{MaxOutputBytes: 1 << 20})
			out, err := f.call(context.Background(), 1)
			if tc.ok {
				require.NoError(t, err)
				assert.True(t, json.Valid(out))
				return
			}
			fail := requireFailure(t, err, record.CodeLimitExceeded)
			assert.Equal(t, record.LimitOutput, fail.Kind)
			assert.Contains(t, fail.Reason, "depth limit of 10000 levels")
			assert.EqualError(t, err, "effect: limitExceeded (output): the result is nested deeper than the depth limit of 10000 levels")
		})
	}
	// The failure is a fresh value each time.
	f := newFixture(t, fakebackend.Return(okOutcome(nested("[", "]", 20000))), &Options{MaxOutputBytes: 1 << 20})
	_, err := f.call(context.Background(), 1)
	requireFailure(t, err, record.CodeLimitExceeded).Reason = "changed"
	_, err = f.call(context.Background(), 1)
	assert.Contains(t, err.Error(), "depth limit")
}

func TestOutputDepthMatchesEncodingJSON(t *testing.T) {
	// json.Valid refuses exactly what tooDeep flags, for valid text.
	for _, d := range []int{1, MaxOutputDepth - 1, MaxOutputDepth, MaxOutputDepth + 1} {
		v := []byte(nested("[", "]", d))
		assert.Equal(t, !json.Valid(v), tooDeep(v, MaxOutputDepth), "depth %d", d)
	}
}
