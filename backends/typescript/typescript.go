package typescript

import (
	"context"
	"errors"
	"fmt"
	"io"

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
}

// Backend is a JavaScript backend that accepts TypeScript. Make one with
// [Wrap].
type Backend struct {
	inner spi.Backend
	caps  spi.Capabilities
	cache *cache // nil when off
}

var (
	_ spi.Backend     = (*Backend)(nil)
	_ spi.Warmer      = (*Backend)(nil)
	_ spi.ScriptSizer = (*Backend)(nil)
	_ io.Closer       = (*Backend)(nil)
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
	caps := js.Capabilities()
	if caps.Language != "javascript" {
		return nil, fmt.Errorf("typescript: the inner backend's language is %q, not \"javascript\"", caps.Language)
	}
	caps.Language = Language
	b := &Backend{inner: js, caps: caps}
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

// Capabilities returns the inner backend's declaration with the language
// "typescript".
func (b *Backend) Capabilities() spi.Capabilities { return b.caps }

// Evaluate strips the types of req.Script and runs the JavaScript on the
// inner backend. A TypeScript syntax error, or module syntax, is a Threw
// outcome named "SyntaxError" and the inner backend is not called.
func (b *Backend) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	js, failure := b.javascript(req.Script)
	if failure != nil {
		return *failure, nil
	}
	req.Script = js
	return b.inner.Evaluate(ctx, req)
}

// javascript returns the script's JavaScript, from the cache when it is
// there, or the outcome that refuses the script.
func (b *Backend) javascript(script []byte) ([]byte, *spi.Outcome) {
	if b.cache == nil {
		return transform(script)
	}
	key := keyOf(script)
	if js, ok := b.cache.get(key); ok {
		return js, nil
	}
	js, failure := transform(script)
	if failure == nil {
		b.cache.put(key, js)
	}
	return js, failure
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
