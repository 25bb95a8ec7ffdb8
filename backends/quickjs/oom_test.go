package quickjs

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// oomScripts run out of any memory limit; QuickJS throws null for some of
// them (it cannot allocate its own InternalError any more), which must
// never read as the script's own error.
var oomScripts = map[string]string{
	"push loop":     `let a = []; for (;;) a.push(new Array(1e5).fill(1))`,
	"promise chain": `let p = Promise.resolve(); let a = []; for (let i = 0; i < 1e9; i++) { p = p.then(() => a.push('x'.repeat(1e4))) }`,
	"awaited chain": `let p = Promise.resolve(); let a = []; for (let i = 0; i < 1e9; i++) { p = p.then(() => a.push('x'.repeat(1e4))) }; p`,
}

// TestOutOfMemoryIsTheLimit: running out of the memory limit is the
// memory limit on both modes, whatever QuickJS throws as it runs out,
// alone and with other runs at the same time.
func TestOutOfMemoryIsTheLimit(t *testing.T) {
	for mode, b := range map[string]*Backend{"parked": shared(t), "fresh": newBackend(t, &Options{Mode: ModeFresh})} {
		for name, script := range oomScripts {
			for _, mem := range []int64{16 << 20, 64 << 20} {
				t.Run(fmt.Sprintf("%s/%s/%dMiB", mode, name, mem>>20), func(t *testing.T) {
					assert.Equal(t, spi.Limited(spi.LimitMemory), eval(t, b, script, "", spi.Limits{MemoryBytes: mem, WallClock: time.Minute}))
				})
			}
		}
		t.Run(mode+"/concurrently", func(t *testing.T) {
			const n = 4
			var wg sync.WaitGroup
			outs := make([]spi.Outcome, n)
			errs := make([]error, n)
			for i := range n {
				wg.Go(func() {
					script := oomScripts["promise chain"]
					if i%2 == 1 {
						script = oomScripts["push loop"]
					}
					outs[i], errs[i] = b.Evaluate(context.Background(), spi.Request{
						Script: []byte(script), Input: []byte("null"),
						Limits: spi.Limits{MemoryBytes: 64 << 20, WallClock: time.Minute},
					})
				})
			}
			wg.Wait()
			for i := range n {
				require.NoError(t, errs[i])
				assert.Equal(t, spi.Limited(spi.LimitMemory), outs[i], "run %d", i)
			}
		})
	}
}
