// Package runfiles is the host's side of a run's files (docs/design.md,
// "Files"), shared by every engine that declares spi.Capabilities.Files:
// the input files a script reads, and the output files it writes, counted
// and bounded by the host as they are written.
//
// A [Set] checks every name with spi.CheckFileName, never buffers more
// than the request's Limits.MaxOutFiles and MaxOutFileBytes allow (the
// bound is checked before a write's bytes are copied), and replaces an
// earlier write of the same name. An engine turns [ErrLimit] into
// spi.Limited(spi.LimitFiles), which the script cannot catch, and the
// other errors into a catchable error in the script's language.
package runfiles

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/sandbank/sandbank/spi"
)

// ErrLimit is the error of a write that would take the run past
// Limits.MaxOutFiles or Limits.MaxOutFileBytes: the run ends with
// spi.Limited(spi.LimitFiles).
var ErrLimit = errors.New("runfiles: past the output files' bounds")

// ErrNoFile is the error of a read of a name that is not an input file.
var ErrNoFile = errors.New("no input file of that name")

// Set is one run's files. Its methods are safe for concurrent use: an
// engine may read the output files while a stopped script still runs.
type Set struct {
	in       map[string][]byte
	names    []string
	maxFiles int
	maxBytes int64

	mu     sync.Mutex
	out    map[string][]byte
	bytes  int64 // the sum of out's lengths
	broken bool  // a write went past a bound: the run ends, nothing more is kept
}

// New returns the files of a run of req: its input files (not copied:
// the engine must not modify them either) and its output bounds.
func New(req spi.Request) *Set {
	s := &Set{
		in:       make(map[string][]byte, len(req.Files)),
		names:    make([]string, 0, len(req.Files)),
		maxFiles: req.Limits.MaxOutFiles,
		maxBytes: req.Limits.MaxOutFileBytes,
	}
	for _, f := range req.Files {
		s.in[f.Name] = f.Data
		s.names = append(s.names, f.Name)
	}
	sort.Strings(s.names)
	return s
}

// List returns the input files' names, sorted. The caller must not
// modify the slice.
func (s *Set) List() []string { return s.names }

// Read returns the input file name's bytes, which the caller must not
// modify, or an error wrapping spi.ErrFileName or [ErrNoFile].
func (s *Set) Read(name string) ([]byte, error) {
	if err := spi.CheckFileName(name); err != nil {
		return nil, err
	}
	b, ok := s.in[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoFile, name)
	}
	return b, nil
}

// Check reports the error Write would report for a write of n bytes to
// name, without writing: an error wrapping spi.ErrFileName, or [ErrLimit].
// An engine whose bytes are not in host memory yet calls it before it
// copies them.
func (s *Set) Check(name string, n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.check(name, n)
}

func (s *Set) check(name string, n int) error {
	if err := spi.CheckFileName(name); err != nil {
		return err
	}
	if s.broken {
		return ErrLimit
	}
	old, replaces := s.out[name]
	if !replaces && len(s.out) >= s.maxFiles {
		s.broken = true
		return ErrLimit
	}
	if s.bytes-int64(len(old))+int64(n) > s.maxBytes {
		s.broken = true
		return ErrLimit
	}
	return nil
}

// Write makes data (copied) the content of the output file name,
// replacing an earlier write of it. It reports an error wrapping
// spi.ErrFileName (nothing is written; the script may catch it), or
// [ErrLimit] when the write would take the run past a bound (nothing is
// written, and every later write fails the same way).
func (s *Set) Write(name string, data []byte) error {
	return s.WriteFunc(name, len(data), func(dst []byte) { copy(dst, data) })
}

// WriteFunc is Write for n bytes that fill writes into a buffer of
// exactly n bytes, called only once the write is known to be within the
// bounds (so an engine copies a script's bytes at most once, and never
// past the bounds).
func (s *Set) WriteFunc(name string, n int, fill func([]byte)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(name, n); err != nil {
		return err
	}
	b := make([]byte, n)
	fill(b)
	if s.out == nil {
		s.out = make(map[string][]byte)
	}
	s.bytes += int64(n) - int64(len(s.out[name]))
	s.out[name] = b
	return nil
}

// Exceeded reports whether a write went past a bound: the run's outcome
// is spi.Limited(spi.LimitFiles), whatever the script did next. A nil
// set never is.
func (s *Set) Exceeded() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.broken
}

// Files returns the output files in name order (nil when there are none).
func (s *Set) Files() []spi.File {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.out) == 0 {
		return nil
	}
	fs := make([]spi.File, 0, len(s.out))
	for n, b := range s.out {
		fs = append(fs, spi.File{Name: n, Data: b})
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].Name < fs[j].Name })
	return fs
}

// Conclude is the outcome of a run whose files are s, given the outcome
// the engine read otherwise: spi.Limited(spi.LimitFiles) when a write went
// past a bound and the run did not end for another limit first; the
// output files attached to an OK outcome; any other outcome as it is
// (the output files of a run that does not end OK are dropped). A nil
// set returns out.
func (s *Set) Conclude(out spi.Outcome) spi.Outcome {
	if s == nil {
		return out
	}
	if s.Exceeded() && out.Kind != spi.KindLimit && out.Kind != spi.KindInfrastructure {
		l := spi.Limited(spi.LimitFiles)
		l.Stats = out.Stats
		return l
	}
	if out.Kind == spi.KindOK {
		out.Files = s.Files()
	}
	return out
}

// Text is b decoded as UTF-8 for a script that reads a file as text:
// each byte that is not part of a valid sequence becomes U+FFFD.
func Text(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + len(b)/2)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(b[:n])
		}
		b = b[n:]
	}
	return sb.String()
}
