package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/atomicfile"
)

// Suspended is what a door keeps of a suspended durable run (package
// durable) until it is resumed.
type Suspended struct {
	// Continuation is the run's continuation as durable's
	// Continuation.Encode wrote it: canonical JSON, checked (its digests,
	// its signature) by durable.Resume, not by the store.
	Continuation json.RawMessage `json:"continuation"`
	// Suspend names the host functions the door made suspend the run,
	// which it gives the resumption again.
	Suspend []string `json:"suspend,omitempty"`
	// Owner is who may resume the run when one store serves several
	// callers (the MCP door's tenant); empty for a store of one tenant's.
	Owner string `json:"owner,omitempty"`
}

// ContinuationStore keeps suspended runs by run id (NewRunID) until they
// are resumed. A run is resumed once: Claim hands it to one resumption,
// which consumes it (the run resumed: the store forgets it) or gives it
// back (the resumption failed before the run produced a record, and may
// be tried again). MemoryContinuations and DirContinuations implement it.
type ContinuationStore interface {
	// Put keeps s as the suspended run's; when it returns nil, Claim
	// finds it (a store on disk has it synced to disk). A run id that is
	// kept already is refused. Past the store's bounds Put fails with an
	// error matching ErrContinuationsFull.
	Put(run string, s Suspended) error
	// Claim hands the run to one resumption: it returns what Put kept
	// and done, which the resumption calls once, with consumed true when
	// the run resumed (the store then forgets it), false to give it back.
	// Until done is called, another Claim of the run fails with an error
	// matching ErrResuming; a run the store does not hold (never kept,
	// consumed, or an id that is not a run id) with one matching
	// fs.ErrNotExist.
	Claim(run string) (s Suspended, done func(consumed bool) error, err error)
	// Len returns how many suspended runs the store holds, and their
	// bytes (as stored).
	Len() (runs int, bytes int64)
}

// ErrResuming is matched by a Claim of a run that another resumption
// holds: the caller's request, not retryable as such (the run is
// resumed by the other, or given back if that one fails). It matches
// effect.ErrInvalidCall.
var ErrResuming = fmt.Errorf("storage: the run is being resumed: %w", effect.ErrInvalidCall)

// ErrContinuationsFull is matched by a Put past a store's bounds: the
// caller (a tenant) keeps as many suspended runs as it may; resuming one
// makes room. It matches effect.ErrQuota (retryable later).
var ErrContinuationsFull = fmt.Errorf("storage: too many suspended runs: %w", effect.ErrQuota)

// The defaults of ContinuationsOptions.
const (
	// DefaultContinuations bounds the suspended runs one store keeps.
	DefaultContinuations = 16384
	// DefaultContinuationBytes bounds their bytes, 1 GiB.
	DefaultContinuationBytes int64 = 1 << 30
	// MaxSuspendedBytes bounds one kept run as stored, so a read is
	// bounded before it buffers: durable's MaxContinuationBytes
	// (6*16 MiB of log, the input, twice the script, 1 MiB), kept here
	// as a number since storage sits beside durable, plus room for the
	// rest of the record.
	MaxSuspendedBytes int64 = 6*16<<20 + effect.DefaultMaxInputBytes + 2*effect.DefaultMaxScriptBytes + 2<<20
)

// ContinuationsOptions configure a MemoryContinuations or a
// DirContinuations. The zero value (or a nil pointer) means defaults.
type ContinuationsOptions struct {
	// MaxRuns bounds the suspended runs kept; zero means
	// DefaultContinuations. It must be >= 0.
	MaxRuns int
	// MaxBytes bounds their bytes as stored; zero means
	// DefaultContinuationBytes. It must be >= 0.
	MaxBytes int64
}

func (o *ContinuationsOptions) resolve(what string) (ContinuationsOptions, error) {
	var r ContinuationsOptions
	if o != nil {
		r = *o
	}
	if r.MaxRuns < 0 || r.MaxBytes < 0 {
		return r, fmt.Errorf("storage: %s: negative bound: %w", what, effect.ErrInvalidLimits)
	}
	if r.MaxRuns == 0 {
		r.MaxRuns = DefaultContinuations
	}
	if r.MaxBytes == 0 {
		r.MaxBytes = DefaultContinuationBytes
	}
	return r, nil
}

// encodeSuspended is s as stored: compact JSON, one line.
func encodeSuspended(s Suspended) ([]byte, error) {
	if !json.Valid(s.Continuation) {
		return nil, fmt.Errorf("storage: continuations: the continuation is not JSON text: %w", effect.ErrInvalidCall)
	}
	b, err := json.Marshal(s) // compact: a RawMessage is compacted as it is written
	if err != nil {
		return nil, fmt.Errorf("storage: continuations: %w", err)
	}
	return b, nil
}

// decodeSuspended reads a stored run, strictly.
func decodeSuspended(b []byte) (Suspended, error) {
	var s Suspended
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil || dec.More() {
		return Suspended{}, errors.New("storage: continuations: a kept run does not decode")
	}
	return s, nil
}

// claims is the resumptions in flight of one store, and its accounting:
// what both stores share.
type claims struct {
	o     ContinuationsOptions
	mu    sync.Mutex
	held  map[string]bool  // run ids claimed, not yet done
	sizes map[string]int64 // run ids kept: their bytes
	bytes int64
}

func newClaims(o ContinuationsOptions) *claims {
	return &claims{o: o, held: map[string]bool{}, sizes: map[string]int64{}}
}

// reserve counts a Put of n bytes for run, or refuses it.
func (c *claims) reserve(run string, n int64) error {
	if !ValidRunID(run) {
		return fmt.Errorf("storage: continuations: %q is not a run id: %w", effect.Excerpt(run), effect.ErrInvalidCall)
	}
	if n > MaxSuspendedBytes {
		return fmt.Errorf("storage: continuations: a run of %d bytes is over MaxSuspendedBytes: %w", n, ErrContinuationsFull)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.sizes[run]; ok {
		return fmt.Errorf("storage: continuations: run %s is kept already: %w", run, effect.ErrInvalidCall)
	}
	if len(c.sizes) >= c.o.MaxRuns || c.bytes+n > c.o.MaxBytes {
		return ErrContinuationsFull
	}
	c.sizes[run] = n
	c.bytes += n
	return nil
}

// unreserve forgets run (a failed Put, or a run consumed).
func (c *claims) unreserve(run string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bytes -= c.sizes[run]
	delete(c.sizes, run)
}

// claim marks run held; it fails when the store does not keep it or
// another holds it.
func (c *claims) claim(run string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.sizes[run]; !ok || !ValidRunID(run) {
		return fmt.Errorf("storage: continuations: no suspended run %s: %w", effect.Excerpt(run), fs.ErrNotExist)
	}
	if c.held[run] {
		return ErrResuming
	}
	c.held[run] = true
	return nil
}

// done ends a claim: forget removes the run (consumed), else it is given
// back. It runs once.
func (c *claims) done(run string, forget func() error) func(bool) error {
	var once sync.Once
	return func(consumed bool) error {
		var err error
		once.Do(func() {
			if consumed {
				err = forget()
			}
			c.mu.Lock()
			delete(c.held, run)
			c.mu.Unlock()
			if consumed && err == nil {
				c.unreserve(run)
			}
		})
		return err
	}
}

func (c *claims) len() (int, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sizes), c.bytes
}

// MemoryContinuations keeps suspended runs in memory: a restart loses
// them. It is bounded (ContinuationsOptions) and never evicts: a run it
// acknowledged is kept until it is resumed. It is safe for concurrent
// use.
type MemoryContinuations struct {
	c  *claims
	mu sync.Mutex
	m  map[string][]byte
}

// NewMemoryContinuations returns an empty MemoryContinuations. A nil
// opts means defaults; a negative bound is refused with an error
// matching effect.ErrInvalidLimits.
func NewMemoryContinuations(opts *ContinuationsOptions) (*MemoryContinuations, error) {
	o, err := opts.resolve("memory continuations")
	if err != nil {
		return nil, err
	}
	return &MemoryContinuations{c: newClaims(o), m: map[string][]byte{}}, nil
}

// Put implements ContinuationStore; it keeps a copy.
func (s *MemoryContinuations) Put(run string, v Suspended) error {
	b, err := encodeSuspended(v)
	if err != nil {
		return err
	}
	if err := s.c.reserve(run, int64(len(b))); err != nil {
		return err
	}
	s.mu.Lock()
	s.m[run] = b
	s.mu.Unlock()
	return nil
}

// Claim implements ContinuationStore.
func (s *MemoryContinuations) Claim(run string) (Suspended, func(bool) error, error) {
	if err := s.c.claim(run); err != nil {
		return Suspended{}, nil, err
	}
	s.mu.Lock()
	b := s.m[run]
	s.mu.Unlock()
	done := s.c.done(run, func() error {
		s.mu.Lock()
		delete(s.m, run)
		s.mu.Unlock()
		return nil
	})
	v, err := decodeSuspended(b)
	if err != nil {
		_ = done(false)
		return Suspended{}, nil, err
	}
	return v, done, nil
}

// Len implements ContinuationStore.
func (s *MemoryContinuations) Len() (int, int64) { return s.c.len() }

// DirContinuations keeps suspended runs in a directory, one file per run
// (<dir>/<run>.json), each written whole or not at all (package
// internal/atomicfile) and synced before Put returns; a resumed run's
// file is removed. It is its directory's owner (as a server is under its
// data directory's lock): NewDirContinuations indexes the files there
// (their names and sizes; it reads none) and removes what a Put cut by
// a crash left behind. Claim reads a regular file only, and never more
// than MaxSuspendedBytes. It is bounded (ContinuationsOptions) and never
// evicts. It is safe for concurrent use.
type DirContinuations struct {
	dir string
	c   *claims
}

// NewDirContinuations opens (creating if needed, mode 0700) a store in
// dir. A nil opts means defaults; a negative bound is refused with an
// error matching effect.ErrInvalidLimits.
func NewDirContinuations(dir string, opts *ContinuationsOptions) (*DirContinuations, error) {
	o, err := opts.resolve("dir continuations")
	if err != nil {
		return nil, err
	}
	if err := makeDir("dir continuations", dir); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: dir continuations: %w", err)
	}
	s := &DirContinuations{dir: dir, c: newClaims(o)}
	for _, e := range ents {
		if atomicfile.IsTemp(e.Name()) {
			_ = os.Remove(filepath.Join(dir, e.Name()))
			continue
		}
		run, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !ValidRunID(run) || !e.Type().IsRegular() {
			continue // not a kept run's path: never read by run id
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		// What was acknowledged is kept, bounds or not: they refuse
		// new runs only.
		s.c.sizes[run] = fi.Size()
		s.c.bytes += fi.Size()
	}
	return s, nil
}

func (s *DirContinuations) path(run string) string { return filepath.Join(s.dir, run+".json") }

// Put implements ContinuationStore.
func (s *DirContinuations) Put(run string, v Suspended) error {
	b, err := encodeSuspended(v)
	if err != nil {
		return err
	}
	if err := s.c.reserve(run, int64(len(b))); err != nil {
		return err
	}
	if err := atomicfile.CreateFile(s.path(run), 0o600, b); err != nil {
		s.c.unreserve(run)
		return fmt.Errorf("storage: dir continuations: %w", err)
	}
	return nil
}

// Claim implements ContinuationStore. A file that is not a regular file,
// is over MaxSuspendedBytes or does not decode is an untyped error, and
// is given back.
func (s *DirContinuations) Claim(run string) (Suspended, func(bool) error, error) {
	if err := s.c.claim(run); err != nil {
		return Suspended{}, nil, err
	}
	path := s.path(run)
	done := s.c.done(run, func() error {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("storage: dir continuations: %w", err)
		}
		atomicfile.SyncDir(s.dir)
		return nil
	})
	b, err := readBounded(context.Background(), path, MaxSuspendedBytes, "storage: dir continuations: ", errKeptNotRegular, errKeptTooLarge)
	if err != nil {
		_ = done(false)
		return Suspended{}, nil, fmt.Errorf("storage: dir continuations: run %s: %w", run, err)
	}
	v, err := decodeSuspended(b)
	if err != nil {
		_ = done(false)
		return Suspended{}, nil, err
	}
	return v, done, nil
}

// Len implements ContinuationStore.
func (s *DirContinuations) Len() (int, int64) { return s.c.len() }

var (
	errKeptNotRegular = errors.New("storage: dir continuations: a kept run is not a regular file")
	errKeptTooLarge   = errors.New("storage: dir continuations: a kept run is over MaxSuspendedBytes")
)

var (
	_ ContinuationStore = (*MemoryContinuations)(nil)
	_ ContinuationStore = (*DirContinuations)(nil)
)

// Continuations returns the named tenant's suspended runs, opening the
// store when first needed: a DirContinuations in the tenant's directory
// (continuations/) with a data directory, else a MemoryContinuations,
// bounded by DataOptions.Continuations. Run ids are the tenant's own:
// another tenant's run is not in its store.
func (d *Data) Continuations(tenant string) (ContinuationStore, error) {
	if _, _, err := d.Tenant(tenant); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errors.New("storage: data: closed")
	}
	td := d.tenants[tenantDir(tenant)]
	if td.continuations != nil {
		return td.continuations, nil
	}
	var err error
	if td.dir == "" {
		td.continuations, err = NewMemoryContinuations(&d.o.Continuations)
	} else {
		td.continuations, err = NewDirContinuations(filepath.Join(td.dir, "continuations"), &d.o.Continuations)
	}
	if err != nil {
		return nil, err
	}
	return td.continuations, nil
}
