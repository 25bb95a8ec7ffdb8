package quickjs

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDifferentialRewrittenVersusOriginal proves that the stop check
// changes nothing a script can see: every corpus script, and the reshape
// workload, gives byte-identical results on QuickJS rewritten (with the
// stop check, and with every pass but it) and on QuickJS as shipped (fresh instances, so that nothing
// but the module differs). The corpus's deadline case is left out: as
// shipped, nothing stops it.
func TestDifferentialRewrittenVersusOriginal(t *testing.T) {
	off := false
	rewritten := newBackend(t, &Options{Mode: ModeFresh})
	original, err := NewWazeroClose(&Options{Mode: ModeFresh}) // the module as shipped
	require.NoError(t, err)
	t.Cleanup(func() { _ = original.Close() })
	unchecked := newBackend(t, &Options{Mode: ModeFresh, StopCheck: &off}) // every pass but the stop check
	reshape, err := os.ReadFile("testdata/reshape.js")
	require.NoError(t, err)
	cases := append([]corpusCase{{name: "reshape", script: string(reshape)}}, corpus...)
	compared := 0
	for _, c := range cases {
		if c.name == "deadline" {
			continue
		}
		want := runCase(t, original, c)
		got := runCase(t, rewritten, c)
		assert.Equal(t, want, got, "%s: the rewritten module answers otherwise", c.name)
		assert.Equal(t, want, runCase(t, unchecked, c), "%s: the module without the stop check answers otherwise", c.name)
		compared++
	}
	require.Greater(t, compared, 20)
}
