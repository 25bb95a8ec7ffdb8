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
	return r.SeeWrites(s, r.b.beforeWrite)
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
