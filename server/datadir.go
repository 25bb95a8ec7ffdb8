package server

import (
	"github.com/sandbank/sandbank/storage"
)

// openData opens what the server keeps per tenant (package storage): in
// memory, or in o.DataDir, whose lock keeps a second server out, and whose
// scripts and receipt logs are read back and checked; the damage found
// is counted in m.
func openData(o *Options, m *metrics) (*storage.Data, error) {
	return storage.OpenData(&storage.DataOptions{
		Dir:                 o.DataDir,
		StoreBytes:          o.StoreBytes,
		StoreEntries:        o.StoreEntries,
		ReceiptSegmentBytes: o.ReceiptSegmentBytes,
		ReceiptSegments:     o.ReceiptSegments,
		Logger:              o.Logger,
		Damaged:             func() { m.damaged.Inc() },
	})
}
