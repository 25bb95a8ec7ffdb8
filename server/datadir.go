package server

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/tenant"
)

// What a server keeps per tenant: its scripts, and the receipts of the
// runs it answered. Without Options.DataDir both live in memory and a
// restart loses them; with it, on disk (see docs/data-dir.md):
//
//	DIR/lock                                       the lock of the server using DIR, holding its process id
//	DIR/tenants/<tenant>/scripts/<hex[:2]>/<hex>   the effect.DirStore of the tenant's scripts
//	DIR/tenants/<tenant>/quarantine/<hex>          scripts found damaged on start, never served
//	DIR/tenants/<tenant>/receipts/<seq>.log         the receipt log's segments, the last one active

// scriptStore is a tenant's script store: an effect.MemoryStore, or
// diskScripts.
type scriptStore interface {
	Put(b []byte) (effect.Address, error)
	ReadScript(ctx context.Context, addr effect.Address) ([]byte, error)
}

// receiptStore is a tenant's receipts by run id: memoryReceipts, or
// receiptLog.
type receiptStore interface {
	append(run string, r effect.Receipt) error
	get(run string) (effect.Receipt, bool, error)
	close() error
}

// tenantData is what the server keeps for one tenant.
type tenantData struct {
	scripts  scriptStore
	receipts receiptStore
}

// data holds every tenant's tenantData, opened when first needed (and on
// start, for every tenant found in the data directory).
type data struct {
	dir  string // "": in memory
	opts *Options
	log  *slog.Logger
	m    *metrics

	mu      sync.Mutex
	closed  bool
	lock    *os.File // the data directory's lock (datadir_lock.go); nil in memory, or once closed
	tenants map[string]*tenantData
}

// DefaultDataDir returns the data directory 'sandbank serve' uses by
// default: $XDG_STATE_HOME/sandbank, or ~/.local/state/sandbank.
func DefaultDataDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "sandbank"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", errors.New("server: no home directory for the default data directory")
	}
	return filepath.Join(home, ".local", "state", "sandbank"), nil
}

// openData opens the data directory (when o.DataDir is set): it takes its
// lock, refusing a directory another server holds (ErrDataDirInUse), then
// reads back every tenant's scripts and receipt log found there, checking
// each (openDiskScripts, openReceiptLog).
func openData(ctx context.Context, o *Options, log *slog.Logger, m *metrics) (*data, error) {
	d := &data{dir: o.DataDir, opts: o, log: log, m: m, tenants: map[string]*tenantData{}}
	if d.dir == "" {
		return d, nil
	}
	lock, err := lockDataDir(d.dir)
	if err != nil {
		return nil, err
	}
	d.lock = lock
	root := filepath.Join(d.dir, "tenants")
	if err := os.MkdirAll(root, 0o700); err != nil {
		_ = d.close()
		return nil, fmt.Errorf("server: data directory: %w", err)
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		_ = d.close()
		return nil, fmt.Errorf("server: data directory: %w", err)
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		td, err := d.openDisk(ctx, filepath.Join(root, e.Name()))
		if err != nil {
			_ = d.close()
			return nil, err
		}
		d.tenants[e.Name()] = td
	}
	return d, nil
}

// tenantDirRx is the names used as they are for a tenant's directory:
// those the tenants document allows, in lower case (a case-insensitive
// file system would merge two names that differ only in case). Any other
// name is "_" and its hex, which no tenant's name can be.
var tenantDirRx = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`) })

func tenantDir(name string) string {
	if tenantDirRx().MatchString(name) {
		return name
	}
	return "_" + hex.EncodeToString([]byte(name))
}

// of returns the tenant's data, opening it when first needed.
func (d *data) of(t *tenant.Tenant) (*tenantData, error) {
	key := tenantDir(t.Name)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errors.New("server: data: closed")
	}
	if td := d.tenants[key]; td != nil {
		return td, nil
	}
	var td *tenantData
	if d.dir == "" {
		st, err := effect.NewMemoryStoreWith(&effect.MemoryStoreOptions{MaxBytes: d.opts.StoreBytes, MaxEntries: d.opts.StoreEntries})
		if err != nil {
			return nil, err // bounds checked in New
		}
		td = &tenantData{scripts: st, receipts: newMemoryReceipts(d.opts.StoreEntries)}
	} else {
		root := filepath.Join(d.dir, "tenants")
		var err error
		if td, err = d.openDisk(context.Background(), filepath.Join(root, key)); err != nil {
			return nil, err
		}
		syncDir(root)
	}
	d.tenants[key] = td
	return td, nil
}

// openDisk opens one tenant's directory.
func (d *data) openDisk(ctx context.Context, dir string) (*tenantData, error) {
	damaged := func() { d.m.damaged.Inc() }
	scripts, err := openDiskScripts(ctx, filepath.Join(dir, "scripts"), filepath.Join(dir, "quarantine"),
		d.opts.StoreBytes, d.opts.StoreEntries, d.log, damaged)
	if err != nil {
		return nil, err
	}
	receipts, err := openReceiptLog(filepath.Join(dir, "receipts"), d.opts.ReceiptSegmentBytes, d.opts.ReceiptSegments, d.log, damaged)
	if err != nil {
		return nil, err
	}
	return &tenantData{scripts: scripts, receipts: receipts}, nil
}

// close closes every receipt log, then releases the data directory's
// lock.
func (d *data) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	var errs []error
	for _, td := range d.tenants {
		errs = append(errs, td.receipts.close())
	}
	if d.lock != nil {
		errs = append(errs, d.lock.Close())
		d.lock = nil
	}
	return errors.Join(errs...)
}

// memoryReceipts keeps a tenant's latest receipts in memory, at most max
// of them (the oldest are forgotten first).
type memoryReceipts struct {
	mu    sync.Mutex
	max   int
	order []string // oldest first
	m     map[string]effect.Receipt
}

func newMemoryReceipts(max int) *memoryReceipts {
	return &memoryReceipts{max: max, m: map[string]effect.Receipt{}}
}

func (r *memoryReceipts) append(run string, rec effect.Receipt) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.order) >= r.max {
		delete(r.m, r.order[0])
		r.order = r.order[1:]
	}
	r.order = append(r.order, run)
	r.m[run] = rec
	return nil
}

func (r *memoryReceipts) get(run string) (effect.Receipt, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.m[run]
	return rec, ok, nil
}

func (r *memoryReceipts) close() error { return nil }
