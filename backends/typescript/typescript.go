package typescript

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/sandbank/sandbank/spi"
)

// Language is the language a wrapped backend declares.
const Language = "typescript"

// Defaults of [Options].
const (
	// DefaultCacheEntries bounds the number of cached transforms.
	DefaultCacheEntries = 1024
	// DefaultCacheBytes bounds the JavaScript held by the cache, 16 MiB.
	DefaultCacheBytes int64 = 16 << 20
)

// Options configure a wrapped backend. The zero value (or nil) means
// defaults.
type Options struct {
	// CacheEntries bounds the transform cache's entries. Zero means
	// DefaultCacheEntries; negative turns the cache off.
	CacheEntries int
	// CacheBytes bounds the transformed JavaScript the cache holds. Zero
	// means DefaultCacheBytes; a script larger than the bound is never
	// cached.
	CacheBytes int64
	// MaxTransforms bounds the transforms running at once. A transform
	// cannot be stopped: one that outlived its run's wall clock keeps its
	// slot until it ends, and a run that finds no free slot waits for one
	// on its wall clock. Zero means runtime.GOMAXPROCS(0) at Wrap.
	MaxTransforms int
}

// Backend is a JavaScript backend that accepts TypeScript. Make one with
// [Wrap].
type Backend struct {
	inner spi.Backend
	caps  spi.Capabilities
	cache *cache // nil when off
	// slots holds a value per transform running (MaxTransforms).
	slots chan struct{}
	// transform strips the types of a script (tests replace it).
	transform func([]byte) ([]byte, *spi.Outcome)
}

var (
	_ spi.Backend            = (*Backend)(nil)
	_ spi.Warmer             = (*Backend)(nil)
	_ spi.ScriptSizer        = (*Backend)(nil)
	_ spi.HostObjectDeclarer = (*Backend)(nil)
	_ io.Closer              = (*Backend)(nil)
)

// Wrap returns a backend that runs TypeScript on js, whose declared
// language must be "javascript". The wrapper declares js's capabilities
// with the language "typescript", and closing it closes js.
func Wrap(js spi.Backend, opts *Options) (*Backend, error) {
	if js == nil {
		return nil, errors.New("typescript: nil backend")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.CacheBytes < 0 {
		return nil, errors.New("typescript: options: negative CacheBytes")
	}
	if o.MaxTransforms < 0 {
		return nil, errors.New("typescript: options: negative MaxTransforms")
	}
	if o.MaxTransforms == 0 {
		o.MaxTransforms = max(1, runtime.GOMAXPROCS(0))
	}
	inner := js.Capabilities()
	if inner.Language != "javascript" {
		return nil, fmt.Errorf("typescript: the inner backend's language is %q, not \"javascript\"", inner.Language)
	}
	b := &Backend{inner: js, caps: Declare(inner), slots: make(chan struct{}, o.MaxTransforms), transform: transform}
	if o.CacheEntries >= 0 {
		entries, size := o.CacheEntries, o.CacheBytes
		if entries == 0 {
			entries = DefaultCacheEntries
		}
		if size == 0 {
			size = DefaultCacheBytes
		}
		b.cache = newCache(entries, size)
	}
	return b, nil
}

// Evaluate strips the types of req.Script and runs the JavaScript on the
// inner backend. A TypeScript syntax error, module syntax, or a script the
// guards refuse before the transform (see the package documentation) is a
// Threw outcome named "SyntaxError" and the inner backend is not called.
// The transform is charged to the run's wall clock: a transform that
// outlives it is Limit wallClock, and the inner backend gets what is left.
func (b *Backend) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	begun := time.Now()
	js, failure, err := b.javascript(ctx, req.Script, req.Limits.WallClock)
	if err != nil {
		return spi.Outcome{}, err
	}
	if failure != nil {
		return *failure, nil
	}
	if wall := req.Limits.WallClock; wall > 0 {
		left := wall - time.Since(begun)
		if left <= 0 {
			return spi.Limited(spi.LimitWallClock), nil
		}
		req.Limits.WallClock = left
	}
	req.Script = js
	return b.inner.Evaluate(ctx, req)
}

// javascript returns the script's JavaScript, from the cache when it is
// there, or the outcome that refuses the script, or ctx's error. Only a
// transform that succeeded within the wall clock is cached.
func (b *Backend) javascript(ctx context.Context, script []byte, wall time.Duration) ([]byte, *spi.Outcome, error) {
	var k key
	if b.cache != nil {
		k = keyOf(script)
		if js, ok := b.cache.get(k); ok {
			return js, nil, nil
		}
	}
	js, failure, err := b.bounded(ctx, script, wall)
	if err == nil && failure == nil && b.cache != nil {
		b.cache.put(k, js)
	}
	return js, failure, err
}

// transformed is what a transform's goroutine hands back.
type transformed struct {
	js      []byte
	failure *spi.Outcome
}

// bounded runs the guards, then the transform on its own goroutine in one
// of the backend's slots, and waits for it until ctx is done or wall
// passes (wall <= 0: no clock of its own). esbuild cannot be stopped: a
// transform given up on runs on in its slot, which it frees when it ends,
// so at most MaxTransforms are ever running.
func (b *Backend) bounded(ctx context.Context, script []byte, wall time.Duration) ([]byte, *spi.Outcome, error) {
	if failure := guard(script); failure != nil {
		return nil, failure, nil
	}
	var expired <-chan time.Time
	if wall > 0 {
		t := time.NewTimer(wall)
		defer t.Stop()
		expired = t.C
	}
	late := spi.Limited(spi.LimitWallClock)
	select {
	case b.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	case <-expired:
		return nil, &late, nil
	}
	done := make(chan transformed, 1)
	go func() {
		defer func() { <-b.slots }()
		defer func() {
			if recover() != nil {
				out := spi.Infrastructure("typescript: the transform panicked")
				done <- transformed{failure: &out}
			}
		}()
		js, failure := b.transform(script)
		done <- transformed{js: js, failure: failure}
	}()
	select {
	case r := <-done:
		return r.js, r.failure, nil
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	case <-expired:
		return nil, &late, nil
	}
}

// MaxScriptBytes returns the inner backend's script bound when it is an
// spi.ScriptSizer, and 0 (no bound of its own) otherwise. It bounds the
// TypeScript source: type stripping only shortens a script, but for enums
// and namespaces, whose JavaScript is a little longer than their
// declaration.
func (b *Backend) MaxScriptBytes() int {
	if s, ok := b.inner.(spi.ScriptSizer); ok {
		return s.MaxScriptBytes()
	}
	return 0
}

// HostObjects returns the inner backend's declared host objects when it is
// an spi.HostObjectDeclarer: type stripping adds nothing a script can
// reach.
func (b *Backend) HostObjects() []string {
	if d, ok := b.inner.(spi.HostObjectDeclarer); ok {
		return d.HostObjects()
	}
	return nil
}

// Leftovers returns the inner backend's count of stopped runs still
// going on when it reports one (goja's Leftovers), and 0 otherwise: type
// stripping leaves nothing running.
func (b *Backend) Leftovers() int {
	if l, ok := b.inner.(interface{ Leftovers() int }); ok {
		return l.Leftovers()
	}
	return 0
}

// Warm warms the inner backend when it implements spi.Warmer.
func (b *Backend) Warm(ctx context.Context) error {
	if w, ok := b.inner.(spi.Warmer); ok {
		return w.Warm(ctx)
	}
	return nil
}

// Close closes the inner backend when it implements io.Closer.
func (b *Backend) Close() error {
	if c, ok := b.inner.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
