package temporal

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	temporalsdk "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/doortest"
	"github.com/sandbank/sandbank/spi"
)

// TestTheDoorsTable runs the requests every door answers alike
// (doortest.Cases; the HTTP, MCP and command-line doors run them in
// cmd/sandbank's TestEveryDoorResolvesAlike) through the activity, a
// worker's engine list standing for the caller's restriction.
func TestTheDoorsTable(t *testing.T) {
	for _, c := range doortest.Cases {
		t.Run(c.Name, func(t *testing.T) {
			acts, err := NewActivities(doortest.Registry(), &Options{Engines: c.Allowed})
			require.NoError(t, err)
			defer acts.Close()
			var s testsuite.WorkflowTestSuite
			env := s.NewTestActivityEnvironment()
			env.RegisterActivityWithOptions(acts.Run, activity.RegisterOptions{Name: ActivityName})
			v, err := env.ExecuteActivity(ActivityName, Request{Engine: c.Engine, Language: c.Language, Source: []byte("x"), Input: doortest.Input,
				Limits: spi.Limits{WallClock: c.WallClock}})
			if c.Want != "" {
				require.NoError(t, err)
				var rec effect.Record
				require.NoError(t, v.Get(&rec))
				assert.Equal(t, c.Want, rec.Receipt.Engine)
				assert.JSONEq(t, string(doortest.Input), string(rec.Value))
				return
			}
			var appErr *temporalsdk.ApplicationError
			require.True(t, errors.As(err, &appErr), "%v", err)
			require.Equal(t, effect.KindInvalidCall, c.Kind)
			assert.Equal(t, TypeInvalidCall, appErr.Type())
			assert.True(t, appErr.NonRetryable())
		})
	}
}
