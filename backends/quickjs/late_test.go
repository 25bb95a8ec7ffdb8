package quickjs

import (
	"bytes"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sandbank/sandbank/spi"
)

// TestLateValueIsNeverDelivered: the script's wall clock runs out while
// the guest writes its result (the hook expires the clock just before the
// write that carries the value, as a timer firing at that instant would):
// the value is never delivered, in either mode (issue 14). A value written
// before the clock ran out still is.
func TestLateValueIsNeverDelivered(t *testing.T) {
	for _, mode := range []Mode{ModeParked, ModeFresh} {
		t.Run(mode.String(), func(t *testing.T) {
			b := newBackend(t, &Options{Mode: mode, ColdStartAllowance: 10 * time.Minute})
			var once sync.Once
			b.beforeWrite = func(p []byte, expire func()) {
				if bytes.Contains(p, []byte("late-marker")) {
					once.Do(expire)
				}
			}
			out := eval(t, b, `"late-" + "marker"`, "", spi.Limits{WallClock: time.Hour})
			assert.Equal(t, spi.Limited(spi.LimitWallClock), out)

			out = eval(t, b, `"on-" + "time"`, "", spi.Limits{WallClock: time.Hour})
			assert.Equal(t, spi.OK(json.RawMessage(`"on-time"`)), out)
		})
	}
}
