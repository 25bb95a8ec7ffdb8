package quickjs

import (
	"io"
	"math"
	"sync"

	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
)

// The host ends of the guest's standard streams.

// stdoutLimit bounds the stdout kept for a run. Only the wrapper writes
// to stdout, and its result is a string held in guest memory, at most
// three bytes of UTF-8 per UTF-16 unit of it.
func stdoutLimit(memoryBytes int64) int {
	n := 3*memoryBytes + 64<<10
	if n > math.MaxInt32 {
		n = math.MaxInt32
	}
	return int(n)
}

// stdoutWriter is what the guest's stdout writes to: the run's sink, seen
// first by the backend's beforeWrite test hook when it is set.
func (r *run) stdoutWriter(s *wasmguest.Stdout) io.Writer {
	if r.b.beforeWrite == nil {
		return s
	}
	return hookedWriter{s, func(p []byte) { r.b.beforeWrite(p, r.expireWallClock) }}
}

// hookedWriter calls before ahead of every write to w.
type hookedWriter struct {
	w      io.Writer
	before func([]byte)
}

func (h hookedWriter) Write(p []byte) (int, error) {
	h.before(p)
	return h.w.Write(p)
}

// phaseReader calls first before the guest's first read of stdin.
type phaseReader struct {
	r     io.Reader
	once  sync.Once
	first func()
}

func (p *phaseReader) Read(b []byte) (int, error) {
	p.once.Do(p.first)
	return p.r.Read(b)
}

// cappedBuffer keeps the first limit bytes written to it and drops the
// rest, never failing the writer.
type cappedBuffer struct {
	mu    sync.Mutex
	limit int
	buf   []byte
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.limit - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (c *cappedBuffer) head(n int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.buf[:min(n, len(c.buf))])
}
