package storage

import (
	"context"
	"fmt"
	"io/fs"
	"sync"
	"testing"

	"github.com/sandbank/sandbank/effect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/record"
)

func has(t *testing.T, s *MemoryStore, b []byte) bool {
	t.Helper()
	_, err := s.ReadScript(context.Background(), record.AddressOf(b))
	if err != nil {
		require.ErrorIs(t, err, fs.ErrNotExist)
		return false
	}
	return true
}

func TestMemoryStoreEvictsLeastRecentlyUsed(t *testing.T) {
	t.Run("entries", func(t *testing.T) {
		s, err := NewMemoryStore(&MemoryStoreOptions{MaxEntries: 2})
		require.NoError(t, err)
		a, b, c := []byte("a"), []byte("b"), []byte("c")
		for _, x := range [][]byte{a, b} {
			_, err := s.Put(x)
			require.NoError(t, err)
		}
		require.True(t, has(t, s, a)) // a is now the most recently used
		_, err = s.Put(c)
		require.NoError(t, err)
		assert.True(t, has(t, s, a))
		assert.False(t, has(t, s, b), "the least recently used script is evicted")
		assert.True(t, has(t, s, c))
		n, size := s.Usage()
		assert.Equal(t, 2, n)
		assert.Equal(t, int64(2), size)
	})
	t.Run("bytes", func(t *testing.T) {
		s, err := NewMemoryStore(&MemoryStoreOptions{MaxBytes: 10})
		require.NoError(t, err)
		four1, four2, six := []byte("1111"), []byte("2222"), []byte("666666")
		for _, x := range [][]byte{four1, four2} {
			_, err := s.Put(x)
			require.NoError(t, err)
		}
		_, err = s.Put(four1) // a Put refreshes too
		require.NoError(t, err)
		_, err = s.Put(six) // 4+4+6 > 10: evict the oldest, four2
		require.NoError(t, err)
		assert.True(t, has(t, s, four1))
		assert.False(t, has(t, s, four2))
		assert.True(t, has(t, s, six))
		_, size := s.Usage()
		assert.Equal(t, int64(10), size)

		_, err = s.Put([]byte("12345678901"))
		assert.ErrorIs(t, err, effect.ErrScriptTooLarge)
		n, _ := s.Usage()
		assert.Equal(t, 2, n, "a refused script evicts nothing")
	})
	t.Run("defaults", func(t *testing.T) {
		for _, s := range []*MemoryStore{{}, mustMemoryStore(t, nil)} {
			maxBytes, maxEntries := s.limits()
			assert.Equal(t, DefaultMemoryStoreBytes, maxBytes)
			assert.Equal(t, DefaultMemoryStoreEntries, maxEntries)
		}
		_, err := NewMemoryStore(&MemoryStoreOptions{MaxEntries: -1})
		requireInvalid(t, err, effect.ErrInvalidLimits)
		_, err = NewMemoryStore(&MemoryStoreOptions{MaxBytes: -1})
		requireInvalid(t, err, effect.ErrInvalidLimits)
	})
	t.Run("zero value is bounded", func(t *testing.T) {
		var s MemoryStore
		for i := range DefaultMemoryStoreEntries + 10 {
			_, err := s.Put(fmt.Appendf(nil, "%d", i))
			require.NoError(t, err)
		}
		n, _ := s.Usage()
		assert.Equal(t, DefaultMemoryStoreEntries, n)
	})
}

func TestMemoryStoreDelete(t *testing.T) {
	s := new(MemoryStore)
	addr, err := s.Put(testScript)
	require.NoError(t, err)
	assert.True(t, s.Delete(addr))
	assert.False(t, s.Delete(addr), "already gone")
	assert.False(t, has(t, s, testScript))
	n, size := s.Usage()
	assert.Zero(t, n)
	assert.Zero(t, size)

	// Through the effect: a deleted script is missing, typed.
	_, err = s.Put(testScript)
	require.NoError(t, err)
	e, err := effect.New(s, fakebackend.New(fakebackend.Capabilities(), fakebackend.Echo()), nil)
	require.NoError(t, err)
	_, err = e.Evaluate(context.Background(), effect.Call{Script: addr, Input: 1})
	require.NoError(t, err)
	s.Delete(addr)
	_, err = e.Evaluate(context.Background(), effect.Call{Script: addr, Input: 1})
	requireFailure(t, err, record.CodeScriptMissing)
}

func TestMemoryStoreConcurrent(t *testing.T) {
	s, err := NewMemoryStore(&MemoryStoreOptions{MaxEntries: 8, MaxBytes: 64})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				b := fmt.Appendf(nil, "script %d", (g*7+i)%20)
				addr, err := s.Put(b)
				assert.NoError(t, err)
				if got, err := s.ReadScript(context.Background(), addr); err == nil {
					assert.Equal(t, b, got)
				}
				if i%5 == 0 {
					s.Delete(addr)
				}
			}
		}()
	}
	wg.Wait()
	n, size := s.Usage()
	assert.LessOrEqual(t, n, 8)
	assert.LessOrEqual(t, size, int64(64))
}
