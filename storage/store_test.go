package storage

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sandbank/sandbank/effect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/record"
)

// store is what both stores offer.
type store interface {
	effect.ScriptReader
	Put(b []byte) (record.Address, error)
}

func stores(t *testing.T) map[string]store {
	t.Helper()
	ds, err := NewDirStore(filepath.Join(t.TempDir(), "scripts"), nil)
	require.NoError(t, err)
	ms, err := NewMemoryStore(nil)
	require.NoError(t, err)
	return map[string]store{"memory": ms, "zero memory": &MemoryStore{}, "dir": ds}
}

func TestStores(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			src := []byte("input.n * 2")
			addr, err := s.Put(src)
			require.NoError(t, err)
			assert.Equal(t, record.AddressOf(src), addr)

			got, err := s.ReadScript(ctx, addr)
			require.NoError(t, err)
			assert.Equal(t, src, got)

			src[0] = 'X' // the store kept its own copy
			got[1] = 'Y' // and hands out copies
			again, err := s.ReadScript(ctx, addr)
			require.NoError(t, err)
			assert.Equal(t, "input.n * 2", string(again))

			again2, err := s.Put([]byte("input.n * 2"))
			require.NoError(t, err)
			assert.Equal(t, addr, again2, "Put is idempotent")

			empty, err := s.Put(nil)
			require.NoError(t, err)
			got, err = s.ReadScript(ctx, empty)
			require.NoError(t, err)
			assert.Empty(t, got)

			_, err = s.ReadScript(ctx, record.AddressOf([]byte("absent")))
			assert.ErrorIs(t, err, fs.ErrNotExist)

			_, err = s.ReadScript(ctx, "sha256:../../etc/passwd")
			assert.Error(t, err)
			assert.NotErrorIs(t, err, fs.ErrNotExist)

			cctx, cancel := context.WithCancel(ctx)
			cancel()
			_, err = s.ReadScript(cctx, addr)
			assert.Equal(t, context.Canceled, err)
		})
	}
}

func TestStoresConcurrentPut(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			var wg sync.WaitGroup
			for i := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// Half write the same script, half distinct ones.
					src := []byte("same")
					if i%2 == 1 {
						src = fmt.Appendf(nil, "script %d", i)
					}
					addr, err := s.Put(src)
					assert.NoError(t, err)
					got, err := s.ReadScript(context.Background(), addr)
					assert.NoError(t, err)
					assert.Equal(t, src, got)
				}()
			}
			wg.Wait()
		})
	}
}

func TestDirStoreLayoutAndAtomicity(t *testing.T) {
	dir := t.TempDir()
	s, err := NewDirStore(dir, nil)
	require.NoError(t, err)
	addr, err := s.Put([]byte("print(1)"))
	require.NoError(t, err)
	hex := string(addr)[len("sha256:"):]
	b, err := os.ReadFile(filepath.Join(dir, hex[:2], hex))
	require.NoError(t, err)
	assert.Equal(t, "print(1)", string(b))
	// No temporary file is left behind.
	entries, err := os.ReadDir(filepath.Join(dir, hex[:2]))
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, hex, entries[0].Name())

	// A second store on the same directory sees the script.
	s2, err := NewDirStore(dir, nil)
	require.NoError(t, err)
	got, err := s2.ReadScript(context.Background(), addr)
	require.NoError(t, err)
	assert.Equal(t, "print(1)", string(got))
}

func TestDirStoreFailedWriteLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	s, err := NewDirStore(dir, nil)
	require.NoError(t, err)
	addr := record.AddressOf([]byte("x"))
	hex := digest(addr)
	// The final name is taken by a non-empty directory: the rename fails.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, hex[:2], hex, "blocker"), 0o700))
	_, err = s.Put([]byte("x"))
	require.Error(t, err)
	entries, err := os.ReadDir(filepath.Join(dir, hex[:2]))
	require.NoError(t, err)
	require.Len(t, entries, 1, "the temporary file was removed")
}

func TestDirStoreTamper(t *testing.T) {
	dir := t.TempDir()
	s, err := NewDirStore(dir, nil)
	require.NoError(t, err)
	addr, err := s.Put(testScript)
	require.NoError(t, err)
	hex := digest(addr)
	require.NoError(t, os.WriteFile(filepath.Join(dir, hex[:2], hex), []byte("evil()"), 0o600))

	_, err = s.ReadScript(context.Background(), addr)
	require.Error(t, err)
	assert.NotErrorIs(t, err, fs.ErrNotExist)
	assert.Contains(t, err.Error(), "does not match its address")

	// Through the effect: untyped, not scriptMissing, backend untouched.
	fb := fakebackend.New(fakebackend.Capabilities(), fakebackend.Echo())
	e, err := effect.New(s, fb, nil)
	require.NoError(t, err)
	_, err = e.Evaluate(context.Background(), effect.Call{Script: addr, Input: 1})
	requireUntyped(t, err)
	assert.NotErrorIs(t, err, effect.ErrScriptMissing)
	assert.Zero(t, fb.Calls())

	// Put repairs the damaged copy.
	_, err = s.Put(testScript)
	require.NoError(t, err)
	got, err := s.ReadScript(context.Background(), addr)
	require.NoError(t, err)
	assert.Equal(t, testScript, got)
}

func TestDirStoreMissingThroughEffect(t *testing.T) {
	s, err := NewDirStore(t.TempDir(), nil)
	require.NoError(t, err)
	fb := fakebackend.New(fakebackend.Capabilities(), fakebackend.Echo())
	e, err := effect.New(s, fb, nil)
	require.NoError(t, err)
	absent := record.AddressOf([]byte("absent"))
	_, err = e.Evaluate(context.Background(), effect.Call{Script: absent, Input: 1})
	f := requireFailure(t, err, record.CodeScriptMissing)
	assert.Equal(t, absent, f.Script)
}

func TestNewDirStoreErrors(t *testing.T) {
	_, err := NewDirStore("", nil)
	assert.Error(t, err)
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	_, err = NewDirStore(file, nil)
	assert.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "storage: dir store: "))
}
