package effect

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/sandbank/sandbank/spi"
)

// BenchmarkRecordOverhead compares the effect's own cost per call on the
// echo path without a record (Evaluate) and with one (Run: the receipt's
// two digests, the record's stats; the script logs nothing), around a
// backend that answers at once.
//
//	go test -run '^$' -bench RecordOverhead -benchmem ./effect/
func BenchmarkRecordOverhead(b *testing.B) {
	store := newMemoryStore()
	addr, _ := store.Put([]byte("input"))
	e, err := New(store, instant{spi.OK(json.RawMessage(`{"n":1}`))}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	call := Call{Script: addr, Input: json.RawMessage(`{"n":1}`)}
	b.Run("evaluate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.Evaluate(ctx, call); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("run", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.Run(ctx, call); err != nil {
				b.Fatal(err)
			}
		}
	})
}
