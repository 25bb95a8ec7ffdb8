package storage

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"
)

// continuationStores are both stores, each fresh, with opts.
func continuationStores(t *testing.T, opts *ContinuationsOptions) map[string]func() ContinuationStore {
	dir := t.TempDir()
	return map[string]func() ContinuationStore{
		"memory": func() ContinuationStore {
			s, err := NewMemoryContinuations(opts)
			require.NoError(t, err)
			return s
		},
		"dir": func() ContinuationStore {
			s, err := NewDirContinuations(filepath.Join(dir, NewRunID()), opts)
			require.NoError(t, err)
			return s
		},
	}
}

func suspended(n int) Suspended {
	return Suspended{Continuation: json.RawMessage(`{"n":` + itoa(n) + `}`), Suspend: []string{"approve"}}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestContinuationResumedOnce: a run is claimed by one resumption at a
// time (another gets ErrResuming); given back, it is claimed again;
// consumed, it is gone (fs.ErrNotExist), as is a run never kept and an
// id that is not a run id.
func TestContinuationResumedOnce(t *testing.T) {
	for name, open := range continuationStores(t, nil) {
		t.Run(name, func(t *testing.T) {
			s := open()
			run := NewRunID()
			require.NoError(t, s.Put(run, suspended(1)))
			requireInvalid(t, s.Put(run, suspended(2)), effect.ErrInvalidCall)

			got, done, err := s.Claim(run)
			require.NoError(t, err)
			assert.Equal(t, suspended(1), got)
			_, _, err = s.Claim(run)
			requireInvalid(t, err, ErrResuming)
			require.NoError(t, done(false))

			_, done, err = s.Claim(run)
			require.NoError(t, err)
			require.NoError(t, done(true))
			require.NoError(t, done(true), "done runs once")
			_, _, err = s.Claim(run)
			require.ErrorIs(t, err, fs.ErrNotExist)
			n, b := s.Len()
			assert.Zero(t, n)
			assert.Zero(t, b)

			for _, id := range []string{NewRunID(), "../" + run, ""} {
				_, _, err = s.Claim(id)
				require.ErrorIs(t, err, fs.ErrNotExist, id)
			}
			requireInvalid(t, s.Put("../x", suspended(1)), effect.ErrInvalidCall)
		})
	}
}

// TestContinuationConcurrentClaims: of many resumptions of one run at
// once, exactly one claims it.
func TestContinuationConcurrentClaims(t *testing.T) {
	for name, open := range continuationStores(t, nil) {
		t.Run(name, func(t *testing.T) {
			s := open()
			run := NewRunID()
			require.NoError(t, s.Put(run, suspended(1)))
			var wg sync.WaitGroup
			var mu sync.Mutex
			won, lost := 0, 0
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, done, err := s.Claim(run)
					mu.Lock()
					defer mu.Unlock()
					if err == nil {
						won++
						assert.NoError(t, done(true))
						return
					}
					lost++
					assert.True(t, errIsAny(err, ErrResuming, fs.ErrNotExist), "%v", err)
				}()
			}
			wg.Wait()
			assert.Equal(t, 1, won)
			assert.Equal(t, 15, lost)
		})
	}
}

func errIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// TestContinuationsBounded: past MaxRuns or MaxBytes a Put is refused
// (ErrContinuationsFull, a quota), nothing is evicted, and a run
// consumed makes room.
func TestContinuationsBounded(t *testing.T) {
	for name, open := range continuationStores(t, &ContinuationsOptions{MaxRuns: 2}) {
		t.Run(name, func(t *testing.T) {
			s := open()
			a, b := NewRunID(), NewRunID()
			require.NoError(t, s.Put(a, suspended(1)))
			require.NoError(t, s.Put(b, suspended(2)))
			err := s.Put(NewRunID(), suspended(3))
			require.ErrorIs(t, err, ErrContinuationsFull)
			require.ErrorIs(t, err, effect.ErrQuota)
			_, done, err := s.Claim(a)
			require.NoError(t, err)
			require.NoError(t, done(true))
			require.NoError(t, s.Put(NewRunID(), suspended(3)))
			_, _, err = s.Claim(b)
			require.NoError(t, err, "nothing is evicted")
		})
	}
	s, err := NewMemoryContinuations(&ContinuationsOptions{MaxBytes: 60})
	require.NoError(t, err)
	require.NoError(t, s.Put(NewRunID(), suspended(1)))
	require.ErrorIs(t, s.Put(NewRunID(), suspended(2)), ErrContinuationsFull)
	_, err = NewDirContinuations(t.TempDir(), &ContinuationsOptions{MaxRuns: -1})
	require.ErrorIs(t, err, effect.ErrInvalidLimits)
}

// TestDirContinuationsKept: a run put is on disk, found by a store opened
// again on the directory (a restart), counted against its bounds; a
// crash's temporary file is removed; a file that is not regular or is
// over the bound is refused and given back, never read.
func TestDirContinuationsKept(t *testing.T) {
	dir := t.TempDir()
	s, err := NewDirContinuations(dir, nil)
	require.NoError(t, err)
	run := NewRunID()
	require.NoError(t, s.Put(run, suspended(7)))
	temp := filepath.Join(dir, "."+run+".json-123.tmp")
	require.NoError(t, os.WriteFile(temp, []byte("{"), 0o600))

	s, err = NewDirContinuations(dir, &ContinuationsOptions{MaxRuns: 1})
	require.NoError(t, err)
	assert.NoFileExists(t, temp)
	n, _ := s.Len()
	assert.Equal(t, 1, n)
	require.ErrorIs(t, s.Put(NewRunID(), suspended(8)), ErrContinuationsFull)
	got, done, err := s.Claim(run)
	require.NoError(t, err)
	assert.Equal(t, suspended(7), got)
	require.NoError(t, done(true))
	assert.NoFileExists(t, filepath.Join(dir, run+".json"))

	big := NewRunID()
	require.NoError(t, s.Put(big, suspended(9)))
	f, err := os.OpenFile(filepath.Join(dir, big+".json"), os.O_WRONLY, 0)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(MaxSuspendedBytes+1)) // sparse: no bytes written
	require.NoError(t, f.Close())
	_, _, err = s.Claim(big)
	require.ErrorIs(t, err, errKeptTooLarge)
	require.NoError(t, os.Remove(filepath.Join(dir, big+".json")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, big+".json"), 0o700))
	_, _, err = s.Claim(big)
	require.ErrorIs(t, err, errKeptNotRegular)
	_, _, err = s.Claim(big)
	require.ErrorIs(t, err, errKeptNotRegular, "given back: claimed again, refused again")
}

// TestDataContinuationsPerTenant: each tenant has its own suspended runs:
// another tenant's run id is not found; in a data directory they are
// kept across a reopen.
func TestDataContinuationsPerTenant(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		d, err := OpenData(&DataOptions{Dir: dir})
		require.NoError(t, err)
		a, err := d.Continuations("alice")
		require.NoError(t, err)
		b, err := d.Continuations("bob")
		require.NoError(t, err)
		again, err := d.Continuations("alice")
		require.NoError(t, err)
		require.Same(t, a, again)
		run := NewRunID()
		require.NoError(t, a.Put(run, suspended(1)))
		_, _, err = b.Claim(run)
		require.ErrorIs(t, err, fs.ErrNotExist)
		require.NoError(t, d.Close())
		if dir == "" {
			continue
		}
		d, err = OpenData(&DataOptions{Dir: dir})
		require.NoError(t, err)
		a, err = d.Continuations("alice")
		require.NoError(t, err)
		got, _, err := a.Claim(run)
		require.NoError(t, err)
		assert.Equal(t, suspended(1), got)
		require.NoError(t, d.Close())
	}
}
