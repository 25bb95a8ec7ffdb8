package storage

import (
	"sync/atomic"
	"testing"
)

// BenchmarkReceiptLogAppend appends receipts from parallel goroutines, as
// concurrent runs of one tenant do: each append is on disk when it
// returns.
func BenchmarkReceiptLogAppend(b *testing.B) {
	l, err := NewReceiptLog(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	var n atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(n.Add(1))
			if err := l.Append(runID(i), testReceipt(i%60)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
