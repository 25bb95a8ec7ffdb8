package guest

import (
	"bytes"
	"sync"
)

// Capped is the host's sink for a guest's own diagnostics (its stderr,
// less the log records): it keeps the first limit bytes written to it
// and drops the rest, never failing the writer. It is safe for
// concurrent use.
type Capped struct {
	mu    sync.Mutex
	limit int
	buf   []byte
}

// NewCapped returns a sink that keeps at most limit bytes.
func NewCapped(limit int) *Capped { return &Capped{limit: limit} }

// Write implements io.Writer: it keeps what fits and reports all of p
// written.
func (c *Capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.limit - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// Bytes returns a copy of what was kept.
func (c *Capped) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.buf)
}

// Head returns at most the first n bytes kept, as a string.
func (c *Capped) Head(n int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.buf[:min(n, len(c.buf))])
}
