package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
)

var testLimits = limits{wallClock: effect.DefaultWallClock, memoryBytes: 1 << 20, maxInput: 100, maxOutput: 2 << 20, maxScript: 100}

func TestToResultMapsEachKindOfError(t *testing.T) {
	for name, c := range map[string]struct {
		rec      *effect.Record
		err      error
		protocol bool // a protocol error, not a result
		isError  bool
		text     string
	}{
		"value":               {rec: &effect.Record{Value: []byte(`[1]`)}, text: "The script returned:\n[1]\n"},
		"output limit":        {err: &effect.Failure{Code: record.CodeLimitExceeded, Kind: record.LimitOutput}, isError: true, text: "over 2.0 MiB of JSON"},
		"cpu limit":           {err: &effect.Failure{Code: record.CodeLimitExceeded, Kind: record.LimitCPU}, isError: true, text: "CPU budget"},
		"input too large":     {err: &effect.Failure{Code: record.CodeInputTooLarge, Kind: record.LimitInput, Bytes: 200, Limit: 100}, isError: true, text: "inputTooLarge (200 bytes of input"},
		"script too large":    {err: &effect.Failure{Code: record.CodeScriptTooLarge, Bytes: 200, Limit: 100}, isError: true, text: "Write a shorter script"},
		"invalid call":        {err: fmt.Errorf("wrapped: %w", effect.ErrInvalidLimits), isError: true, text: "The call was refused"},
		"canceled":            {err: context.Canceled, protocol: true},
		"deadline":            {err: context.DeadlineExceeded, protocol: true},
		"closed":              {err: effect.ErrClosed, protocol: true},
		"infrastructure":      {err: errors.New("engine: broken\nsecond line"), protocol: true},
		"overloaded":          {err: effect.ErrOverloaded, protocol: true},
		"no record, no error": {protocol: true},
	} {
		t.Run(name, func(t *testing.T) {
			res, err := toResult("eng", testLimits, c.rec, c.err)
			if c.protocol {
				require.Error(t, err)
				assert.Nil(t, res)
				assert.NotContains(t, err.Error(), "\n", "one line")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.isError, res.IsError)
			r := res.StructuredContent.(Result)
			assert.Equal(t, !c.isError, r.OK)
			assert.NotNil(t, r.Logs, "logs are never null")
			require.Len(t, res.Content, 1)
			assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, c.text)
		})
	}
}

// TestAnswersCoverEveryKind: every kind of error the effect declares has
// its answer at the MCP door, so a new kind cannot fall through.
func TestAnswersCoverEveryKind(t *testing.T) {
	for _, k := range effect.Kinds() {
		_, ok := answers[k]
		assert.True(t, ok, "kind %s has no MCP answer", k)
	}
	assert.Len(t, answers, len(effect.Kinds()))
}

func TestArgumentProblemsNeverEchoTheScript(t *testing.T) {
	secret := "const password = 'hunter2';"
	for _, raw := range []string{
		`{"script": "` + secret + `", "extra": 1}`,
		`{"script": "` + secret + `", "limits": {"timeoutMs": "x"}}`,
		`{"script": "` + secret + `", "limits": {"timeoutMs": 999999999}}`,
		`{"script": "` + secret + `"} trailing`,
		`["` + secret + `"]`,
		`{"script": "` + secret,
	} {
		_, problem := decodeArgs([]byte(raw), testLimits)
		require.NotEmpty(t, problem, raw)
		assert.NotContains(t, problem, "hunter2", raw)
	}
}
