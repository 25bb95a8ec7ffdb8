package quickjs

import (
	"io"
	"sync"

	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
)

// The host ends of the guest's standard streams.

// stdoutWriter is what the guest's stdout writes to: the run's sink, seen
// first by the backend's beforeWrite test hook when it is set.
func (r *run) stdoutWriter(s *wasmguest.Stdout) io.Writer {
	if r.b.beforeWrite == nil {
		return s
	}
	return hookedWriter{s, func(p []byte) { r.b.beforeWrite(p, r.ExpireWallClock) }}
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
