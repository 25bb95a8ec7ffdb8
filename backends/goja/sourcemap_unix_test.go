//go:build unix

package goja_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// TestSourceMapsAreNotRead: goja's parser reads the file named by a
// "//# sourceMappingURL=" comment (a file: URL, or a path relative to the
// process's directory) from the host's file system: a FIFO there hangs
// the run's goroutine for good, /dev/zero exhausts the host's memory. The
// backend turns source maps off for the script and for every source
// parsed at run time; here the comment names a FIFO nobody writes, so a
// parser that opened it would never return.
func TestSourceMapsAreNotRead(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "map.fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	t.Cleanup(func() {
		// Release a reader, if one is blocked: a writer that opens and
		// closes gives it end of file.
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = f.Close()
		}
	})
	comment := `//# sourceMappingURL=file://` + fifo
	b := newBackend(t, nil)
	for name, script := range map[string]string{
		"the script": "1\n" + comment + "\n",
		"eval":       "eval(" + strconv.Quote("1\n"+comment+"\n") + ")",
		"Function":   "Function(" + strconv.Quote("return 1\n"+comment+"\n") + ")()",
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, spi.OK(json.RawMessage(`1`)), eval(t, b, script, "", spi.Limits{WallClock: 5 * time.Second}))
		})
	}
}
