package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sandbank/sandbank/effect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/record"
)

// scriptPath is where the store keeps the script at addr.
func scriptPath(t *testing.T, dir string, addr record.Address) string {
	t.Helper()
	hex := digest(addr)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, hex[:2]), 0o700))
	return filepath.Join(dir, hex[:2], hex)
}

// readWithin reads addr from s through an effect and fails the test when
// it has not returned within the watchdog. The context has no deadline: a
// read that blocks would block for ever.
func readWithin(t *testing.T, s *DirStore, addr record.Address) error {
	t.Helper()
	fb := fakebackend.New(fakebackend.Capabilities(), fakebackend.Echo())
	e, err := effect.New(s, fb, nil)
	require.NoError(t, err)
	done := make(chan error, 2)
	go func() {
		_, err := s.ReadScript(context.Background(), addr)
		done <- err
		_, err = e.Evaluate(context.Background(), effect.Call{Script: addr, Input: 1})
		done <- err
	}()
	var errs [2]error
	for i := range errs {
		select {
		case errs[i] = <-done:
		case <-t.Context().Done():
		case <-timeAfterWatchdog():
			t.Fatal("the store blocked on a file that is not a regular file")
		}
	}
	require.Error(t, errs[0], "the store read it")
	requireUntyped(t, errs[1])
	assert.NotErrorIs(t, errs[1], effect.ErrScriptMissing)
	assert.Zero(t, fb.Calls(), "the backend is not called")
	return errs[0]
}

func TestDirStoreRefusesOversizedFileUnread(t *testing.T) {
	dir := t.TempDir()
	s, err := NewDirStore(dir, &DirStoreOptions{MaxScriptBytes: 1 << 20})
	require.NoError(t, err)
	addr := record.AddressOf(testScript)
	// A sparse 1 GiB file: cheap to make, ruinous to read whole.
	f, err := os.Create(scriptPath(t, dir, addr))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(1<<30))
	require.NoError(t, f.Close())
	err = readWithin(t, s, addr)
	assert.EqualError(t, err, "storage: dir store: stored script is over the store's size bound")
}

func TestDirStoreBound(t *testing.T) {
	dir := t.TempDir()
	s, err := NewDirStore(dir, &DirStoreOptions{MaxScriptBytes: 4})
	require.NoError(t, err)
	_, err = s.Put([]byte("12345"))
	assert.ErrorIs(t, err, effect.ErrScriptTooLarge)
	assert.EqualError(t, err, "storage: dir store: script of 5 bytes over the store's bound of 4 bytes: effect: script too large")
	addr, err := s.Put([]byte("1234"))
	require.NoError(t, err)
	got, err := s.ReadScript(context.Background(), addr)
	require.NoError(t, err)
	assert.Equal(t, "1234", string(got))

	// A file written past the bound behind the store's back.
	require.NoError(t, os.WriteFile(scriptPath(t, dir, addr), []byte("123456"), 0o600))
	_, err = s.ReadScript(context.Background(), addr)
	assert.EqualError(t, err, "storage: dir store: stored script is over the store's size bound")

	d, err := NewDirStore(t.TempDir(), nil)
	require.NoError(t, err)
	assert.Equal(t, effect.DefaultMaxScriptBytes, d.max, "the default is the effect's script bound")
	_, err = NewDirStore(t.TempDir(), &DirStoreOptions{MaxScriptBytes: -1})
	requireInvalid(t, err, effect.ErrInvalidLimits)
}

func TestDirStoreRefusesADirectory(t *testing.T) {
	dir := t.TempDir()
	s, err := NewDirStore(dir, nil)
	require.NoError(t, err)
	addr := record.AddressOf(testScript)
	require.NoError(t, os.Mkdir(scriptPath(t, dir, addr), 0o700))
	err = readWithin(t, s, addr)
	assert.EqualError(t, err, "storage: dir store: stored script is not a regular file")
}

// TestDirStoreBoundUnderConcurrentPuts: concurrent Puts of distinct
// scripts into a store bounded to n entries store exactly n; the rest are
// refused as a full store, and a restart finds the n.
func TestDirStoreBoundUnderConcurrentPuts(t *testing.T) {
	dir := t.TempDir()
	open := func() *DirStore {
		s, err := NewDirStore(filepath.Join(dir, "scripts"), &DirStoreOptions{
			MaxBytes: 1 << 20, MaxEntries: 5, Quarantine: filepath.Join(dir, "quarantine"),
			Damaged: func() { t.Error("damaged") }})
		require.NoError(t, err)
		return s
	}
	s := open()
	var wg sync.WaitGroup
	var stored, full atomic.Int64
	for i := range 20 {
		wg.Go(func() {
			_, err := s.Put(fmt.Appendf(nil, "script %d", i))
			switch {
			case err == nil:
				stored.Add(1)
			case errors.Is(err, ErrStoreFull):
				full.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(5), stored.Load())
	assert.Equal(t, int64(15), full.Load())
	assert.Len(t, open().known, 5)
}

// TestDirStoreBoundsNeedAnOwner: bounds count what the store holds, which
// only a store that reads the directory on open (Quarantine) knows.
func TestDirStoreBoundsNeedAnOwner(t *testing.T) {
	_, err := NewDirStore(t.TempDir(), &DirStoreOptions{MaxEntries: 1})
	require.ErrorIs(t, err, effect.ErrInvalidCall)
	_, err = NewDirStore(t.TempDir(), &DirStoreOptions{MaxBytes: -1, Quarantine: t.TempDir()})
	requireInvalid(t, err, effect.ErrInvalidLimits)
}
