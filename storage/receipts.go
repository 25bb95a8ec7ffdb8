package storage

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"sync"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
)

// DefaultMemoryReceipts is the default bound on the receipts a
// MemoryReceipts keeps.
const DefaultMemoryReceipts = 4096

// MemoryReceiptsOptions configure a MemoryReceipts. The zero value (or a
// nil *MemoryReceiptsOptions) means defaults.
type MemoryReceiptsOptions struct {
	// MaxEntries bounds the receipts kept: past it the oldest is
	// forgotten. Zero means DefaultMemoryReceipts; it must be >= 0.
	MaxEntries int
}

// MemoryReceipts keeps the latest receipts in memory, a ReceiptStore
// whose receipts a restart loses. It is safe for concurrent use.
type MemoryReceipts struct {
	mu    sync.Mutex
	max   int
	order []string // oldest first
	m     map[string]record.Receipt
}

// NewMemoryReceipts returns an empty MemoryReceipts. A nil opts means
// defaults; a negative bound is refused with an error matching
// effect.ErrInvalidLimits.
func NewMemoryReceipts(opts *MemoryReceiptsOptions) (*MemoryReceipts, error) {
	var o MemoryReceiptsOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxEntries < 0 {
		return nil, fmt.Errorf("storage: memory receipts: negative bound: %w", effect.ErrInvalidLimits)
	}
	if o.MaxEntries == 0 {
		o.MaxEntries = DefaultMemoryReceipts
	}
	return &MemoryReceipts{max: o.MaxEntries, m: map[string]record.Receipt{}}, nil
}

// Append keeps r as the receipt of run, forgetting the oldest when the
// store is full.
func (r *MemoryReceipts) Append(run string, rec record.Receipt) error {
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

// Get returns the receipt of run.
func (r *MemoryReceipts) Get(run string) (record.Receipt, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.m[run]
	return rec, ok, nil
}

// Close does nothing: the receipts stay readable.
func (r *MemoryReceipts) Close() error { return nil }

var runIDRx = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{32}$`) })

// ValidRunID reports whether s is a run id as NewRunID makes them: 32
// lower-case hex digits.
func ValidRunID(s string) bool { return runIDRx().MatchString(s) }

// NewRunID returns a new run id: 128 random bits in hex.
func NewRunID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}
