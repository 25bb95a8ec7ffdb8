package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxProblemBytes is the bound the tests hold every Problem body to,
// whatever the caller sent: its detail quotes at most an excerpt of the
// caller's text (effect.Excerpt).
const maxProblemBytes = 1024

// TestProblemsQuoteAnExcerpt: a 1 MiB engine or language name, or field
// name, comes back as a short Problem that still says what was wrong.
func TestProblemsQuoteAnExcerpt(t *testing.T) {
	l := startServer(t, testRegistry(t), &Options{MaxBodyBytes: 8 << 20})
	c := &http.Client{Timeout: time.Minute}
	huge := strings.Repeat("n", 1<<20)
	many := map[string]any{"engine": "goja", "source": "1"}
	for i := range 1000 {
		many[fmt.Sprintf("extra%d", i)] = 1
	}
	for _, tc := range []struct {
		name   string
		body   any
		status int
		says   string
	}{
		{"unknown engine", map[string]any{"engine": huge, "source": "1"}, 400, `unknown engine "nnnn`},
		{"unknown language", map[string]any{"language": huge, "source": "1"}, 400, `unknown language "nnnn`},
		{"engine of another language", map[string]any{"engine": "goja", "language": huge, "source": "1"}, 400, `engine goja runs javascript, not "nnnn`},
		{"unknown field", map[string]any{"engine": "goja", "source": "1", huge: 1}, 422, `unexpected property`},
		{"many unknown fields", many, 422, `unexpected property`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.body)
			require.NoError(t, err)
			resp, err := c.Post(l.url+"/v1/runs", "application/json", strings.NewReader(string(b)))
			require.NoError(t, err)
			defer resp.Body.Close()
			out, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.LessOrEqual(t, len(out), maxProblemBytes, "%.2000s", out)
			var p Problem
			require.NoError(t, json.Unmarshal(out, &p))
			said := p.Detail
			for _, e := range p.Errors {
				said += "; " + e.Message + " at " + e.Location
			}
			assert.Contains(t, said, tc.says)
			assertRetryable(t, resp.StatusCode, out)
		})
	}
}
