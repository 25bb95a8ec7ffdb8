package storage

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/atomicfile"
	"github.com/sandbank/sandbank/record"
)

// The defaults of the receipt log's rotation (ReceiptLogOptions).
const (
	DefaultReceiptSegmentBytes = 16 << 20
	DefaultReceiptSegments     = 8
)

// maxReceiptRecord bounds one record of the receipt log: a receipt is a
// few hundred bytes (its texts are bounded by the effect); a frame that
// claims more is damaged.
const maxReceiptRecord = 1 << 20

// frameHeader is a record's header: its payload's length and the CRC-32C
// of the payload, both big-endian uint32.
const frameHeader = 8

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// segmentExt names the receipt log's segment files, <seq>.log with seq a
// zero-padded decimal number.
const segmentExt = ".log"

// loggedReceipt is one record of the receipt log: the run's id and the
// receipt as the effect made it. Fields are only ever added.
type loggedReceipt struct {
	Run     string         `json:"run"`
	Receipt record.Receipt `json:"receipt"`
}

// ReceiptLog is an append-only log of receipts by run id in a directory,
// a ReceiptStore on disk: segments <seq>.log, the last one the active
// segment. Every record is a frame (a big-endian uint32 length and the
// CRC-32C of the payload, then the JSON of {"run": ..., "receipt": ...})
// written and fsynced before Append returns. An index in memory maps run
// ids to frames; a read checks the frame again. One process at a time
// may use a directory (the data directory's lock sees to it).
type ReceiptLog struct {
	dir          string
	segmentBytes int64
	segments     int
	log          *slog.Logger
	damaged      func()               // counts a damaged record found
	syncFile     func(*os.File) error // (*os.File).Sync; a test's fault

	mu      sync.RWMutex
	closed  bool
	broken  error // a sync failed: no more appends
	active  *os.File
	retired []*os.File // sealed segments still open, closed by the next sync
	size    int64      // of the active segment
	segs    []*segment
	index   map[string]frameLoc
	written uint64 // records written since the start

	syncMu sync.Mutex // one sync at a time
	synced uint64     // records durable since the start; under syncMu
}

type segment struct {
	seq  uint64
	runs []string // the run ids indexed in it, to forget when it is removed
}

type frameLoc struct {
	seq uint64
	off int64
	n   int32 // payload length
}

func segmentName(seq uint64) string { return fmt.Sprintf("%020d%s", seq, segmentExt) }

// ReceiptLogOptions configure a ReceiptLog. The zero value (or a nil
// *ReceiptLogOptions) means defaults.
type ReceiptLogOptions struct {
	// SegmentBytes bounds a segment: a full one is sealed and a new one
	// started. Zero means DefaultReceiptSegmentBytes; it must be >= 0.
	SegmentBytes int64
	// Segments bounds the segments kept: past it the oldest is removed,
	// with its receipts. Zero means DefaultReceiptSegments; it must be
	// >= 0.
	Segments int
	// Logger hears of every damaged record found and of a failed sync.
	// Nil means none.
	Logger *slog.Logger
	// Damaged, when not nil, is called once for every damaged record
	// found.
	Damaged func()
}

// NewReceiptLog opens (creating if needed) the log in dir. A nil opts
// means defaults; a negative bound is refused with an error matching
// effect.ErrInvalidLimits. It reads every segment back, indexing each
// record that checks. A frame that does not check (damaged) is reported
// and skipped to the next frame that does (resync): it is never a reason
// to drop the good records after it. When no frame after it checks, it is
// a tail torn by a crash: the active segment is cut there, a sealed one is
// read no further.
func NewReceiptLog(dir string, opts *ReceiptLogOptions) (*ReceiptLog, error) {
	var o ReceiptLogOptions
	if opts != nil {
		o = *opts
	}
	if o.SegmentBytes < 0 || o.Segments < 0 {
		return nil, fmt.Errorf("storage: receipt log: negative bound: %w", effect.ErrInvalidLimits)
	}
	if o.SegmentBytes == 0 {
		o.SegmentBytes = DefaultReceiptSegmentBytes
	}
	if o.Segments == 0 {
		o.Segments = DefaultReceiptSegments
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Damaged == nil {
		o.Damaged = func() {}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("storage: receipt log: %w", err)
	}
	l := &ReceiptLog{dir: dir, segmentBytes: o.SegmentBytes, segments: o.Segments, log: o.Logger, damaged: o.Damaged,
		syncFile: (*os.File).Sync, index: map[string]frameLoc{}}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: receipt log: %w", err)
	}
	var seqs []uint64
	for _, e := range ents {
		name := e.Name()
		seq, err := strconv.ParseUint(strings.TrimSuffix(name, segmentExt), 10, 64)
		if !e.Type().IsRegular() || !strings.HasSuffix(name, segmentExt) || err != nil || name != segmentName(seq) {
			continue
		}
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	for i, seq := range seqs {
		last := i == len(seqs)-1
		size, err := l.load(seq, last)
		if err != nil {
			return nil, err
		}
		if last {
			l.size = size
		}
	}
	if len(seqs) == 0 {
		if err := l.create(1); err != nil {
			return nil, err
		}
		return l, nil
	}
	f, err := os.OpenFile(filepath.Join(dir, segmentName(seqs[len(seqs)-1])), os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("storage: receipt log: %w", err)
	}
	if _, err := f.Seek(l.size, io.SeekStart); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("storage: receipt log: %w", err)
	}
	l.active = f
	return l, nil
}

// load reads segment seq, indexing its records, and returns the size of
// what it holds up to the end of its last record that checks. The active
// segment is truncated to it (a torn tail).
func (l *ReceiptLog) load(seq uint64, active bool) (int64, error) {
	path := filepath.Join(l.dir, segmentName(seq))
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("storage: receipt log: %w", err)
	}
	seg := &segment{seq: seq}
	l.segs = append(l.segs, seg)
	off := int64(0)
	for off < int64(len(b)) {
		rec, n, ok := decodeFrame(b[off:])
		if !ok {
			l.damaged()
			next := resync(b, off+1)
			if next >= 0 {
				l.log.Warn("sandbank: receipt log: a record does not check; it is skipped, and the records after it are served",
					slog.String("segment", path), slog.Int64("offset", off), slog.Int64("bytes", next-off))
				off = next
				continue
			}
			l.log.Warn("sandbank: receipt log: a record does not check, nor does any after it (a torn tail); they are not served",
				slog.String("segment", path), slog.Int64("offset", off), slog.Int64("bytes", int64(len(b))-off))
			if active {
				if err := os.Truncate(path, off); err != nil {
					return 0, fmt.Errorf("storage: receipt log: %w", err)
				}
			}
			break
		}
		if _, dup := l.index[rec.Run]; !dup && ValidRunID(rec.Run) {
			l.index[rec.Run] = frameLoc{seq: seq, off: off, n: int32(n - frameHeader)}
			seg.runs = append(seg.runs, rec.Run)
		}
		off += int64(n)
	}
	return off, nil
}

// payloadStart is how every record's payload starts: the JSON of a
// loggedReceipt, whose first field is the run's id (encodeFrame).
var payloadStart = []byte(`{"run":"`)

// resync returns the offset of the first frame that checks at or after
// from in b, or -1. It tries only the offsets whose payload would start
// as a record's does, so it reads a damaged region once rather than
// checksumming a frame at every byte. No frame hides inside a payload:
// a payload is JSON text, which holds no byte below 0x20, and every
// frame's length, at most maxReceiptRecord, starts with a zero byte.
func resync(b []byte, from int64) int64 {
	for at := from + frameHeader; at < int64(len(b)); {
		i := bytes.Index(b[at:], payloadStart)
		if i < 0 {
			return -1
		}
		start := at + int64(i) - frameHeader
		if _, _, ok := decodeFrame(b[start:]); ok {
			return start
		}
		at += int64(i) + 1
	}
	return -1
}

// decodeFrame decodes the frame at the start of b: the record and the
// frame's whole length, or false when b does not start with a whole frame
// that checks.
func decodeFrame(b []byte) (loggedReceipt, int, bool) {
	var rec loggedReceipt
	if len(b) < frameHeader {
		return rec, 0, false
	}
	n := binary.BigEndian.Uint32(b)
	if n == 0 || n > maxReceiptRecord || int64(len(b)-frameHeader) < int64(n) {
		return rec, 0, false
	}
	payload := b[frameHeader : frameHeader+int(n)]
	if crc32.Checksum(payload, crcTable) != binary.BigEndian.Uint32(b[4:]) {
		return rec, 0, false
	}
	if json.Unmarshal(payload, &rec) != nil {
		return rec, 0, false
	}
	return rec, frameHeader + int(n), true
}

// encodeFrame returns rec as a frame.
func encodeFrame(rec loggedReceipt) ([]byte, error) {
	payload, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("storage: receipt log: %w", err)
	}
	if len(payload) > maxReceiptRecord {
		return nil, errors.New("storage: receipt log: the receipt is over the record bound")
	}
	b := make([]byte, frameHeader, frameHeader+len(payload))
	binary.BigEndian.PutUint32(b, uint32(len(payload)))
	binary.BigEndian.PutUint32(b[4:], crc32.Checksum(payload, crcTable))
	return append(b, payload...), nil
}

// create starts segment seq as the active one, durably.
func (l *ReceiptLog) create(seq uint64) error {
	f, err := os.OpenFile(filepath.Join(l.dir, segmentName(seq)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("storage: receipt log: %w", err)
	}
	atomicfile.SyncDir(l.dir)
	l.active, l.size = f, 0
	l.segs = append(l.segs, &segment{seq: seq})
	return nil
}

// Append writes the record of run and syncs it to disk; when it returns
// nil, the receipt survives a crash of the process or the machine. A
// record that would pass the active segment's size bound starts a new
// segment first, and the oldest segments past the bound on their number
// are removed.
//
// Appends commit in groups: records are written one at a time, and one
// fsync makes every record written before it durable, so concurrent
// appends share syncs. A failed sync breaks the log: what it should have
// made durable is unknown, so every later append fails, until a restart
// reads the log back and checks it.
func (l *ReceiptLog) Append(run string, r record.Receipt) error {
	frame, err := encodeFrame(loggedReceipt{Run: run, Receipt: r})
	if err != nil {
		return err
	}
	l.mu.Lock()
	if err := l.usable(); err != nil {
		l.mu.Unlock()
		return err
	}
	if l.size > 0 && l.size+int64(len(frame)) > l.segmentBytes {
		if err := l.rotate(); err != nil {
			l.mu.Unlock()
			return err
		}
	}
	n, err := l.active.Write(frame)
	if err != nil {
		// What was written may be torn: cut it, so the next record starts
		// on a frame boundary.
		if terr := l.active.Truncate(l.size); terr == nil {
			_, _ = l.active.Seek(l.size, io.SeekStart)
		} else {
			l.broken = terr
		}
		l.mu.Unlock()
		return fmt.Errorf("storage: receipt log: %w", err)
	}
	l.size += int64(n)
	seg := l.segs[len(l.segs)-1]
	l.index[run] = frameLoc{seq: seg.seq, off: l.size - int64(len(frame)), n: int32(len(frame) - frameHeader)}
	seg.runs = append(seg.runs, run)
	l.written++
	mine := l.written
	l.mu.Unlock()
	return l.sync(mine)
}

// usable returns why the log cannot take an append, or nil. l.mu is held.
func (l *ReceiptLog) usable() error {
	switch {
	case l.closed:
		return errors.New("storage: receipt log: closed")
	case l.broken != nil:
		return errors.New("storage: receipt log: a sync failed; the log takes no more records until a restart")
	}
	return nil
}

// sync returns once the record numbered mine is durable: a sync by
// another append may have made it so already; else this one syncs the
// active segment, which makes every record written so far durable (a
// sealed segment was synced when it was sealed).
func (l *ReceiptLog) sync(mine uint64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.synced >= mine {
		return nil
	}
	l.mu.Lock()
	if err := l.usable(); err != nil {
		l.mu.Unlock()
		return err
	}
	target, f := l.written, l.active
	retired := l.retired
	l.retired = nil
	l.mu.Unlock()
	for _, r := range retired {
		_ = r.Close() // synced when sealed
	}
	if err := l.syncFile(f); err != nil {
		l.mu.Lock()
		l.broken = err
		l.mu.Unlock()
		l.log.Error("sandbank: receipt log: a sync failed; the log takes no more records (its runs are answered 503) until a restart",
			slog.String("log", l.dir), slog.String("error", effect.Excerpt(err.Error())))
		return fmt.Errorf("storage: receipt log: %w", err)
	}
	l.synced = target
	return nil
}

// rotate seals the active segment (synced, then closed by the next sync,
// which may be using it), starts the next one, and removes the oldest
// segments past the bound. l.mu is held.
func (l *ReceiptLog) rotate() error {
	if err := l.syncFile(l.active); err != nil {
		l.broken = err
		return fmt.Errorf("storage: receipt log: %w", err)
	}
	l.retired = append(l.retired, l.active)
	l.active = nil
	if err := l.create(l.segs[len(l.segs)-1].seq + 1); err != nil {
		l.broken = err
		return err
	}
	for len(l.segs) > l.segments {
		old := l.segs[0]
		if err := os.Remove(filepath.Join(l.dir, segmentName(old.seq))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("storage: receipt log: %w", err)
		}
		for _, run := range old.runs {
			if l.index[run].seq == old.seq {
				delete(l.index, run)
			}
		}
		l.segs = l.segs[1:]
	}
	return nil
}

// Get returns the receipt of run, reading its frame and checking it
// again; false when the log does not hold it (never logged, removed by
// rotation, or damaged since it was indexed).
func (l *ReceiptLog) Get(run string) (record.Receipt, bool, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	loc, ok := l.index[run]
	if !ok || l.closed {
		return record.Receipt{}, false, nil
	}
	f, err := os.Open(filepath.Join(l.dir, segmentName(loc.seq)))
	if err != nil {
		return record.Receipt{}, false, fmt.Errorf("storage: receipt log: %w", err)
	}
	defer f.Close()
	b := make([]byte, frameHeader+int(loc.n))
	if _, err := f.ReadAt(b, loc.off); err != nil {
		return record.Receipt{}, false, fmt.Errorf("storage: receipt log: %w", err)
	}
	rec, _, ok := decodeFrame(b)
	if !ok || rec.Run != run {
		l.damaged()
		l.log.Warn("sandbank: receipt log: a record does not check; it is not served",
			slog.String("segment", f.Name()), slog.Int64("offset", loc.off))
		return record.Receipt{}, false, errors.New("storage: receipt log: the record does not check")
	}
	return rec.Receipt, true, nil
}

// Close closes the active segment; Append then fails.
func (l *ReceiptLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	for _, r := range l.retired {
		_ = r.Close()
	}
	l.retired = nil
	if l.active == nil {
		return nil
	}
	return l.active.Close()
}
