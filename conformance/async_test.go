package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/fixtures"
	"github.com/sandbank/sandbank/spi"
)

func TestAsyncValueCatchesWhatAPromiseIsNot(t *testing.T) {
	for _, tc := range []struct {
		name     string
		behavior behavior
		reason   string
	}{
		{"the promise written as {}", returns(`{}`), "the result must be the promise's value, not the promise"},
		{"a rejection reported as a value", func(ctx context.Context, f *fake, req spi.Request) (spi.Outcome, error) {
			var in struct{ Mode string }
			_ = json.Unmarshal(req.Input, &in)
			if in.Mode == "reject" {
				return spi.OK(json.RawMessage(`{}`)), nil
			}
			return asyncBehavior(ctx, f, req)
		}, "a rejected promise must end in a typed scriptError"},
		{"a pending promise that is an engine failure", func(ctx context.Context, f *fake, req spi.Request) (spi.Outcome, error) {
			var in struct{ Mode string }
			_ = json.Unmarshal(req.Input, &in)
			if in.Mode == "pending" {
				return spi.Outcome{}, errors.New("the job queue hung")
			}
			return asyncBehavior(ctx, f, req)
		}, "a promise that never settles must end in a typed scriptError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := newFakeConfig()
			cfg.override["async_value"] = tc.behavior
			rep := check(t, cfg, &Options{Cases: []string{"async_value"}})
			got := result(t, rep, "async_value")
			assert.Equal(t, StatusFail, got.Status)
			assert.Contains(t, got.Reason, tc.reason)
		})
	}
	t.Run("an honest engine", func(t *testing.T) {
		rep := check(t, newFakeConfig(), &Options{Cases: []string{"async_value"}})
		got := result(t, rep, "async_value")
		assert.Equal(t, StatusPass, got.Status, got.Reason)
	})
}

func TestOnlyDeclarableCasesCanBeDeclaredInapplicable(t *testing.T) {
	fsys := fstest.MapFS{
		"echo.js":          {Data: []byte("input;")},
		"echo.skip":        {Data: []byte("this language has no echo")},
		"async_value.skip": {Data: []byte("this language has no promises")},
	}
	set, err := fixtures.New("javascript", ".js", fsys)
	require.NoError(t, err)
	cfg := newFakeConfig()
	cfg.set = set // the fake answers the toy set's scripts
	rep := check(t, cfg, &Options{Fixtures: &set, Cases: []string{"echo", "async_value"}})
	assert.Equal(t, StatusPass, result(t, rep, "echo").Status, "echo cannot be declared away")
	async := result(t, rep, "async_value")
	assert.Equal(t, StatusSkip, async.Status)
	assert.Equal(t, "the javascript fixture set declares: this language has no promises", async.Reason)

	delete(fsys, "async_value.skip")
	rep = check(t, cfg, &Options{Fixtures: &set, Cases: []string{"async_value"}})
	assert.Equal(t, StatusFail, result(t, rep, "async_value").Status, "a set that neither answers nor declares the case fails it")
}
