package storage

import (
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/atomicfile"
)

// What a door keeps per tenant: its scripts, and the receipts of the runs
// it answered. Without a directory both live in memory and a restart loses
// them; with one, on disk (see docs/data-dir.md):
//
//	DIR/lock                                       the lock of the process using DIR, holding its process id
//	DIR/keys/signing.key                           the signing key of DIR (SigningKeyFile), its public key beside it
//	DIR/tenants/<tenant>/scripts/<hex[:2]>/<hex>   the DirStore of the tenant's scripts
//	DIR/tenants/<tenant>/quarantine/<hex>          scripts found damaged on open, never served
//	DIR/tenants/<tenant>/receipts/<seq>.log         the ReceiptLog's segments, the last one active
//	DIR/tenants/<tenant>/continuations/<run>.json  the DirContinuations of the tenant's suspended runs

// Data holds every tenant's script store and receipt store, in memory or
// in a data directory, each opened when first needed (and, in a
// directory, on open for every tenant found there). Build it with
// OpenData; it is safe for concurrent use.
type Data struct {
	o       DataOptions
	damaged atomic.Uint64

	mu      sync.Mutex
	closed  bool
	lock    *os.File // the directory's lock (lock.go); nil in memory, or once closed
	tenants map[string]*tenantData
}

// tenantData is what Data keeps for one tenant.
type tenantData struct {
	scripts       ScriptStore
	receipts      ReceiptStore
	continuations ContinuationStore // opened when first needed (continuations.go)
	dir           string            // the tenant's directory; "" in memory
}

// DataOptions configure OpenData. The zero value (or a nil *DataOptions)
// means defaults: every tenant's stores in memory.
type DataOptions struct {
	// Dir is the data directory. Empty means in memory: a restart loses
	// what was kept.
	Dir string
	// StoreBytes and StoreEntries bound each tenant's script store (and
	// StoreBytes one script in it). In memory the least recently used
	// scripts are evicted (MemoryStore); in Dir a full store refuses a new
	// script (DirStore, ErrStoreFull), since what it acknowledged is kept.
	// StoreEntries also bounds the receipts kept in memory. Zero means
	// DefaultTenantBytes and DefaultTenantEntries; they must be >= 0.
	StoreBytes   int64
	StoreEntries int
	// ReceiptSegmentBytes and ReceiptSegments bound each tenant's receipt
	// log in Dir (ReceiptLogOptions). Zero means the log's defaults.
	ReceiptSegmentBytes int64
	ReceiptSegments     int
	// Logger hears of the damage found in Dir (see Data.Damaged). Nil
	// means none.
	Logger *slog.Logger
	// Continuations bounds each tenant's suspended runs
	// (Data.Continuations). The zero value means its defaults.
	Continuations ContinuationsOptions
}

// The defaults of DataOptions.
const (
	DefaultTenantBytes   = 64 << 20
	DefaultTenantEntries = 4096
)

// DefaultDataDir returns the data directory 'sandbank serve' uses by
// default: $XDG_STATE_HOME/sandbank, or ~/.local/state/sandbank.
func DefaultDataDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "sandbank"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", errors.New("storage: no home directory for the default data directory")
	}
	return filepath.Join(home, ".local", "state", "sandbank"), nil
}

// SigningKeyFile is where a data directory keeps the key that signs its
// owner's receipts (the public key beside it).
func SigningKeyFile(dataDir string) string {
	return filepath.Join(dataDir, "keys", "signing.key")
}

// OpenData opens every tenant's stores. A nil opts means defaults; a
// negative bound is refused with an error matching
// effect.ErrInvalidLimits. With opts.Dir it takes the directory's lock,
// refusing a directory another holds (an error matching ErrDataDirInUse,
// naming the process holding it), then reads back every tenant's scripts
// and receipt log found there, checking each (DirStore with a quarantine,
// NewReceiptLog): a cost in proportion to what is stored.
func OpenData(opts *DataOptions) (*Data, error) {
	d := &Data{tenants: map[string]*tenantData{}}
	if opts != nil {
		d.o = *opts
	}
	if d.o.StoreBytes == 0 {
		d.o.StoreBytes = DefaultTenantBytes
	}
	if d.o.StoreEntries == 0 {
		d.o.StoreEntries = DefaultTenantEntries
	}
	if d.o.Logger == nil {
		d.o.Logger = slog.New(slog.DiscardHandler)
	}
	if d.o.StoreBytes < 0 || d.o.StoreEntries < 0 || d.o.ReceiptSegmentBytes < 0 || d.o.ReceiptSegments < 0 ||
		d.o.Continuations.MaxRuns < 0 || d.o.Continuations.MaxBytes < 0 {
		return nil, fmt.Errorf("storage: data: negative bound: %w", effect.ErrInvalidLimits)
	}
	if d.o.Dir == "" {
		return d, nil
	}
	lock, err := lockDataDir(d.o.Dir)
	if err != nil {
		return nil, err
	}
	d.lock = lock
	root := filepath.Join(d.o.Dir, "tenants")
	if err := os.MkdirAll(root, 0o700); err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("storage: data directory: %w", err)
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("storage: data directory: %w", err)
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		td, err := d.open(filepath.Join(root, e.Name()))
		if err != nil {
			_ = d.Close()
			return nil, err
		}
		d.tenants[e.Name()] = td
	}
	return d, nil
}

// Dir returns the data directory; "" in memory.
func (d *Data) Dir() string { return d.o.Dir }

// Damaged returns how many stored scripts and receipt-log records were
// found damaged (not matching their address or checksum), on open or on
// read since; none of them is served.
func (d *Data) Damaged() uint64 { return d.damaged.Load() }

func (d *Data) damage() { d.damaged.Add(1) }

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

// Tenant returns the named tenant's script store and receipt store,
// opening them when first needed.
func (d *Data) Tenant(name string) (ScriptStore, ReceiptStore, error) {
	key := tenantDir(name)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, nil, errors.New("storage: data: closed")
	}
	if td := d.tenants[key]; td != nil {
		return td.scripts, td.receipts, nil
	}
	var td *tenantData
	var err error
	if d.o.Dir == "" {
		td, err = d.open("")
	} else {
		root := filepath.Join(d.o.Dir, "tenants")
		td, err = d.open(filepath.Join(root, key))
		atomicfile.SyncDir(root)
	}
	if err != nil {
		return nil, nil, err
	}
	d.tenants[key] = td
	return td.scripts, td.receipts, nil
}

// open opens one tenant's stores: in dir, or in memory when dir is "".
func (d *Data) open(dir string) (*tenantData, error) {
	if dir == "" {
		scripts, err := NewMemoryStore(&MemoryStoreOptions{MaxBytes: d.o.StoreBytes, MaxEntries: d.o.StoreEntries})
		if err != nil {
			return nil, err
		}
		receipts, err := NewMemoryReceipts(&MemoryReceiptsOptions{MaxEntries: d.o.StoreEntries})
		if err != nil {
			return nil, err
		}
		return &tenantData{scripts: scripts, receipts: receipts}, nil
	}
	scripts, err := NewDirStore(filepath.Join(dir, "scripts"), &DirStoreOptions{
		MaxScriptBytes: d.o.StoreBytes, MaxBytes: d.o.StoreBytes, MaxEntries: d.o.StoreEntries,
		Quarantine: filepath.Join(dir, "quarantine"), Logger: d.o.Logger, Damaged: d.damage,
	})
	if err != nil {
		return nil, err
	}
	receipts, err := NewReceiptLog(filepath.Join(dir, "receipts"), &ReceiptLogOptions{
		SegmentBytes: d.o.ReceiptSegmentBytes, Segments: d.o.ReceiptSegments,
		Logger: d.o.Logger, Damaged: d.damage,
	})
	if err != nil {
		return nil, err
	}
	return &tenantData{scripts: scripts, receipts: receipts, dir: dir}, nil
}

// Close closes every tenant's receipt store, then releases the data
// directory's lock. The stores fail once it is closed; closing again does
// nothing.
func (d *Data) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	var errs []error
	for _, td := range d.tenants {
		errs = append(errs, td.receipts.Close())
	}
	if d.lock != nil {
		errs = append(errs, d.lock.Close())
		d.lock = nil
	}
	return errors.Join(errs...)
}
