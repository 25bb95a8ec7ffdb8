package storage

import (
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
)

// ScriptStore is a content-addressed script store: what a door keeps a
// caller's scripts in, and what an effect reads a call's script from by
// address. MemoryStore and DirStore implement it.
type ScriptStore interface {
	effect.ScriptReader
	// Put stores b and returns its address (record.AddressOf). Storing a
	// script that is there already is no error. A script the store
	// cannot take (over a bound) is an error matching
	// effect.ErrScriptTooLarge.
	Put(b []byte) (record.Address, error)
}

// ReceiptStore keeps the receipts of the runs a door answered, by run id
// (NewRunID). MemoryReceipts and ReceiptLog implement it.
type ReceiptStore interface {
	// Append keeps r as the receipt of run; when it returns nil, Get
	// finds it (a store on disk has it synced to disk).
	Append(run string, r record.Receipt) error
	// Get returns the receipt of run; false when the store does not hold
	// it (never kept, or forgotten past the store's bound).
	Get(run string) (record.Receipt, bool, error)
	// Close releases what the store holds open (a ReceiptLog's files,
	// whose Append then fails).
	Close() error
}

var (
	_ ScriptStore  = (*MemoryStore)(nil)
	_ ScriptStore  = (*DirStore)(nil)
	_ ReceiptStore = (*MemoryReceipts)(nil)
	_ ReceiptStore = (*ReceiptLog)(nil)
)
