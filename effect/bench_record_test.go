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

// instantFiles is instant declaring Files.
type instantFiles struct{ instant }

func (instantFiles) Capabilities() spi.Capabilities {
	c := instant{}.Capabilities()
	c.Files = true
	return c
}

// BenchmarkFilesOverhead is the effect's own cost of 1 MiB of input files
// and 1 MiB of output files (4 files of 256 KiB each way) around a backend
// that answers at once: without a record (Evaluate: the checks and
// copies) and with one (Run: the digests too).
//
//	go test -run '^$' -bench FilesOverhead -benchmem ./effect/
func BenchmarkFilesOverhead(b *testing.B) {
	files := make([]spi.File, 4)
	for i := range files {
		files[i] = spi.File{Name: "f" + string(rune('0'+i)), Data: make([]byte, 256<<10)}
	}
	out := spi.OK(json.RawMessage(`{"n":1}`))
	out.Files = files
	e, err := New(newMemoryStore(), instantFiles{instant{out}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	call := Call{Source: []byte("input"), Input: json.RawMessage(`{"n":1}`), Files: files}
	b.Run("evaluate", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.Evaluate(ctx, call); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("run", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.Run(ctx, call); err != nil {
				b.Fatal(err)
			}
		}
	})
}
