package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

func testReceipt(i int) record.Receipt {
	return record.Receipt{Format: record.ReceiptFormat, Engine: "goja", SPIVersion: "1", Outcome: record.OutcomeOK,
		Capabilities: spi.Capabilities{Language: "javascript", Network: spi.NetworkNone, WallClock: spi.WallClockHard},
		OutputDigest: fmt.Sprintf("sha256:%064x", i), Started: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC)}
}

func openTestLog(t *testing.T, dir string, segmentBytes int64, segments int) (*ReceiptLog, *atomic.Int64) {
	t.Helper()
	var damaged atomic.Int64
	l, err := NewReceiptLog(dir, &ReceiptLogOptions{SegmentBytes: segmentBytes, Segments: segments, Damaged: func() { damaged.Add(1) }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l, &damaged
}

func runID(i int) string { return fmt.Sprintf("%032x", i) }

// TestReceiptLogTornTail: a tail cut by a crash (a header with half its
// payload, a whole frame whose checksum fails) is reported, cut off on
// start and never served; the records before it are, and appending goes
// on from the cut.
func TestReceiptLogTornTail(t *testing.T) {
	for name, tail := range map[string]func(frame []byte) []byte{
		"half a header":   func(f []byte) []byte { return f[:frameHeader/2] },
		"half a payload":  func(f []byte) []byte { return f[:len(f)-3] },
		"a bad checksum":  func(f []byte) []byte { flipDigest(f); return f },
		"a zero length":   func(f []byte) []byte { return make([]byte, 16) },
		"a huge length":   func(f []byte) []byte { binary.BigEndian.PutUint32(f, maxReceiptRecord+1); return f },
		"a bad json body": func(f []byte) []byte { return mustFrame([]byte("{not json")) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l, _ := openTestLog(t, dir, DefaultReceiptSegmentBytes, DefaultReceiptSegments)
			for i := range 3 {
				require.NoError(t, l.Append(runID(i), testReceipt(i)))
			}
			require.NoError(t, l.Close())
			seg := filepath.Join(dir, segmentName(1))
			good, err := os.ReadFile(seg)
			require.NoError(t, err)
			frame, err := encodeFrame(loggedReceipt{Run: runID(3), Receipt: testReceipt(3)})
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(seg, append(append([]byte{}, good...), tail(frame)...), 0o600))

			l, damaged := openTestLog(t, dir, DefaultReceiptSegmentBytes, DefaultReceiptSegments)
			assert.Equal(t, int64(1), damaged.Load())
			after, err := os.ReadFile(seg)
			require.NoError(t, err)
			assert.Equal(t, good, after, "the torn tail is cut off")
			for i := range 3 {
				r, ok, err := l.Get(runID(i))
				require.NoError(t, err)
				require.True(t, ok)
				assert.Equal(t, testReceipt(i), r)
			}
			_, ok, err := l.Get(runID(3))
			require.NoError(t, err)
			assert.False(t, ok, "a torn record is never served")

			require.NoError(t, l.Append(runID(4), testReceipt(4)))
			require.NoError(t, l.Close())
			l, damaged = openTestLog(t, dir, DefaultReceiptSegmentBytes, DefaultReceiptSegments)
			assert.Zero(t, damaged.Load())
			r, ok, err := l.Get(runID(4))
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, testReceipt(4), r)
		})
	}
}

func mustFrame(payload []byte) []byte {
	f := make([]byte, frameHeader)
	binary.BigEndian.PutUint32(f, uint32(len(payload)))
	binary.BigEndian.PutUint32(f[4:], crc32Of(payload))
	return append(f, payload...)
}

// TestReceiptLogRotation: a full segment is sealed and a new one started;
// past the bound on segments the oldest is removed with its receipts,
// which are then unknown, on start too.
func TestReceiptLogRotation(t *testing.T) {
	dir := t.TempDir()
	frame, err := encodeFrame(loggedReceipt{Run: runID(0), Receipt: testReceipt(0)})
	require.NoError(t, err)
	per := 4 // records per segment
	l, _ := openTestLog(t, dir, int64(per*len(frame)), 3)
	const n = 30
	for i := range n {
		require.NoError(t, l.Append(runID(i), testReceipt(i)))
	}
	check := func(l *ReceiptLog) {
		t.Helper()
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Len(t, ents, 3, "at most 3 segments are kept")
		kept := 0
		for i := range n {
			r, ok, err := l.Get(runID(i))
			require.NoError(t, err)
			if ok {
				kept++
				assert.Equal(t, testReceipt(i), r)
			} else {
				assert.Less(t, i, n-2*per, "a receipt of the last two segments is kept")
			}
		}
		assert.LessOrEqual(t, kept, 3*per)
		assert.GreaterOrEqual(t, kept, 2*per)
	}
	check(l)
	require.NoError(t, l.Close())
	l, damaged := openTestLog(t, dir, int64(per*len(frame)), 3)
	assert.Zero(t, damaged.Load())
	check(l)
}

// TestReceiptLogDamagedSealedSegment: a record damaged in a sealed segment
// is reported on start and not served; every other record is, the ones
// after it in that segment included, and the sealed segment is left as
// it is.
func TestReceiptLogDamagedSealedSegment(t *testing.T) {
	dir := t.TempDir()
	frame, err := encodeFrame(loggedReceipt{Run: runID(0), Receipt: testReceipt(0)})
	require.NoError(t, err)
	l, _ := openTestLog(t, dir, int64(4*len(frame)), 8)
	for i := range 8 {
		require.NoError(t, l.Append(runID(i), testReceipt(i)))
	}
	require.NoError(t, l.Close())
	seg := filepath.Join(dir, segmentName(1))
	b, err := os.ReadFile(seg)
	require.NoError(t, err)
	flipDigest(b[len(frame):]) // in record 1's payload
	require.NoError(t, os.WriteFile(seg, b, 0o600))

	l, damaged := openTestLog(t, dir, int64(4*len(frame)), 8)
	assert.Equal(t, int64(1), damaged.Load())
	for i := range 8 {
		_, ok, err := l.Get(runID(i))
		require.NoError(t, err)
		assert.Equal(t, i != 1, ok, "record %d", i)
	}
	after, err := os.ReadFile(seg)
	require.NoError(t, err)
	assert.Equal(t, b, after, "a sealed segment is not cut")
}

// TestReceiptLogDamagedInTheMiddle: one record damaged in the middle of
// the active segment (a flipped byte in its payload, or in its header's
// length) is reported on start and not served, and every record after it
// is: a damaged frame is skipped to the next frame that checks, and the
// segment is not cut. Appends go on after the last record.
func TestReceiptLogDamagedInTheMiddle(t *testing.T) {
	const n, bad = 20, 5
	for name, damage := range map[string]func(frame []byte){
		"a payload byte":            func(f []byte) { flipDigest(f) },
		"a length byte":             func(f []byte) { f[3] ^= 0x40 },
		"a length past the segment": func(f []byte) { f[1] = 0x0f },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l, _ := openTestLog(t, dir, DefaultReceiptSegmentBytes, DefaultReceiptSegments)
			var offs []int
			size := 0
			for i := range n {
				offs = append(offs, size)
				require.NoError(t, l.Append(runID(i), testReceipt(i)))
				frame, err := encodeFrame(loggedReceipt{Run: runID(i), Receipt: testReceipt(i)})
				require.NoError(t, err)
				size += len(frame)
			}
			require.NoError(t, l.Close())
			seg := filepath.Join(dir, segmentName(1))
			b, err := os.ReadFile(seg)
			require.NoError(t, err)
			require.Len(t, b, size)
			damage(b[offs[bad]:offs[bad+1]])
			require.NoError(t, os.WriteFile(seg, b, 0o600))

			l, damaged := openTestLog(t, dir, DefaultReceiptSegmentBytes, DefaultReceiptSegments)
			assert.Equal(t, int64(1), damaged.Load())
			for i := range n {
				r, ok, err := l.Get(runID(i))
				require.NoError(t, err)
				require.Equal(t, i != bad, ok, "record %d", i)
				if ok {
					assert.Equal(t, testReceipt(i), r)
				}
			}
			after, err := os.ReadFile(seg)
			require.NoError(t, err)
			assert.Equal(t, b, after, "a segment is not cut before records that check")

			require.NoError(t, l.Append(runID(n), testReceipt(n)))
			require.NoError(t, l.Close())
			l, damaged = openTestLog(t, dir, DefaultReceiptSegmentBytes, DefaultReceiptSegments)
			assert.Equal(t, int64(1), damaged.Load(), "the damaged record, still there, is reported again")
			for i := range n + 1 {
				_, ok, err := l.Get(runID(i))
				require.NoError(t, err)
				assert.Equal(t, i != bad, ok, "record %d", i)
			}
		})
	}
}

// TestReceiptLogDamagedAfterStart: a record damaged after it was indexed
// is refused when read, and reported.
func TestReceiptLogDamagedAfterStart(t *testing.T) {
	dir := t.TempDir()
	l, damaged := openTestLog(t, dir, DefaultReceiptSegmentBytes, DefaultReceiptSegments)
	require.NoError(t, l.Append(runID(1), testReceipt(1)))
	seg := filepath.Join(dir, segmentName(1))
	b, err := os.ReadFile(seg)
	require.NoError(t, err)
	flipDigest(b)
	require.NoError(t, os.WriteFile(seg, b, 0o600))
	_, ok, err := l.Get(runID(1))
	require.Error(t, err)
	assert.False(t, ok)
	assert.Equal(t, int64(1), damaged.Load())
}

func crc32Of(b []byte) uint32 { return crc32.Checksum(b, crcTable) }

// flipDigest changes a digit of the first output digest in b: the JSON
// still parses, only the checksum tells.
func flipDigest(b []byte) {
	i := bytes.Index(b, []byte(`"sha256:0`))
	b[i+8] = '1'
}

// FuzzReceiptLogOpen: whatever bytes the active segment holds, opening
// the log neither fails nor panics; it serves every record a plain reader
// finds (reading frame after frame, and past a frame that does not check,
// from the next offset where one does), cuts the segment only after the
// last of them (a torn tail), and appends after it.
func FuzzReceiptLogOpen(f *testing.F) {
	one, err := encodeFrame(loggedReceipt{Run: runID(1), Receipt: testReceipt(1)})
	require.NoError(f, err)
	two, err := encodeFrame(loggedReceipt{Run: runID(2), Receipt: testReceipt(2)})
	require.NoError(f, err)
	damaged := append([]byte{}, one...)
	flipDigest(damaged)
	f.Add([]byte{})
	f.Add(one)
	f.Add(append(append([]byte{}, one...), one[:11]...))
	f.Add(mustFrame([]byte(`{"run":"x"}`)))
	f.Add(append(append(append([]byte{}, one...), damaged...), two...))
	f.Add(append(append([]byte{}, damaged[:20]...), two...))
	f.Fuzz(func(t *testing.T, b []byte) {
		// The plain reader: every frame that checks, in order, and the
		// end of the last.
		var found []loggedReceipt
		end := 0
		for off := 0; off < len(b); {
			if rec, n, ok := decodeFrame(b[off:]); ok {
				found = append(found, rec)
				off += n
				end = off
				continue
			}
			next := -1
			for o := off + 1; o+frameHeader < len(b) && next < 0; o++ {
				if _, _, ok := decodeFrame(b[o:]); ok && bytes.HasPrefix(b[o+frameHeader:], []byte(`{"run":"`)) {
					next = o
				}
			}
			if next < 0 {
				break
			}
			off = next
		}

		dir := t.TempDir()
		seg := filepath.Join(dir, segmentName(1))
		require.NoError(t, os.WriteFile(seg, b, 0o600))
		l, _ := openTestLog(t, dir, DefaultReceiptSegmentBytes, DefaultReceiptSegments)
		kept, err := os.ReadFile(seg)
		require.NoError(t, err)
		require.Equal(t, b[:end], kept, "the segment is cut after its last record that checks, and only there")
		served := map[string]bool{}
		for _, rec := range found {
			if !ValidRunID(rec.Run) || served[rec.Run] {
				continue // the first record of a run is the one served
			}
			served[rec.Run] = true
			r, ok, err := l.Get(rec.Run)
			require.NoError(t, err)
			require.True(t, ok, "run %s is not served", rec.Run)
			assert.Equal(t, rec.Receipt, r)
		}
		require.NoError(t, l.Append(runID(99), testReceipt(99)))
		r, ok, err := l.Get(runID(99))
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, testReceipt(99), r)
	})
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestReceiptLogConcurrentAppends: appends from many goroutines (which
// share syncs) are all there, whole, after a reopen, across rotations.
func TestReceiptLogConcurrentAppends(t *testing.T) {
	dir := t.TempDir()
	frame, err := encodeFrame(loggedReceipt{Run: runID(0), Receipt: testReceipt(0)})
	require.NoError(t, err)
	l, _ := openTestLog(t, dir, int64(50*len(frame)), 100)
	var syncs atomic.Int64
	l.syncFile = func(f *os.File) error { syncs.Add(1); return f.Sync() }
	const goroutines, each = 8, 40
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				assert.NoError(t, l.Append(runID(g*each+i), testReceipt(i)))
			}
		})
	}
	wg.Wait()
	t.Logf("%d appends, %d syncs", goroutines*each, syncs.Load())
	require.NoError(t, l.Close())
	l, damaged := openTestLog(t, dir, int64(50*len(frame)), 100)
	assert.Zero(t, damaged.Load())
	for g := range goroutines {
		for i := range each {
			r, ok, err := l.Get(runID(g*each + i))
			require.NoError(t, err)
			require.True(t, ok, "record %d/%d", g, i)
			assert.Equal(t, testReceipt(i), r)
		}
	}
}

// TestReceiptLogFailedSyncBreaksIt: an append whose sync fails fails, and
// so does every later one (what the failed sync covered is unknown), until
// the log is opened again.
func TestReceiptLogFailedSyncBreaksIt(t *testing.T) {
	dir := t.TempDir()
	l, _ := openTestLog(t, dir, DefaultReceiptSegmentBytes, DefaultReceiptSegments)
	require.NoError(t, l.Append(runID(1), testReceipt(1)))
	l.syncFile = func(*os.File) error { return errors.New("EIO") }
	require.Error(t, l.Append(runID(2), testReceipt(2)))
	l.syncFile = (*os.File).Sync
	require.Error(t, l.Append(runID(3), testReceipt(3)), "a log whose sync failed takes no more records")
	require.NoError(t, l.Close())
	l, _ = openTestLog(t, dir, DefaultReceiptSegmentBytes, DefaultReceiptSegments)
	require.NoError(t, l.Append(runID(4), testReceipt(4)))
	_, ok, err := l.Get(runID(1))
	require.NoError(t, err)
	assert.True(t, ok)
}
