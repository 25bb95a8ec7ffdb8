package guest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/sandbank/sandbank/internal/runfiles"
	"github.com/sandbank/sandbank/spi"
)

// A run's files (docs/design.md, "Files") over the framed stdio protocol.
// The guest asks for each operation with a file record on stdout and
// blocks on stdin for the reply; the host's reader of stdin (Stdin, given
// the run's runfiles.Set by SetFiles) takes the record, does the
// operation on the set, which checks names and bounds, and serves the
// reply. The guest never holds the host's bounds: the host counts what it
// keeps.
//
// A file record is FramePrefix, the nonce, 'D', the header's length in
// UTF-16 units, a newline, the header (a JSON array) and the end marker:
//
//	["l"]                      list: the reply is the names as a JSON array
//	["r", name, "t" or "b"]    read as text (UTF-8, invalid bytes U+FFFD) or bytes
//	["w", name, "s" or "b", n] write: the data follows, then the end marker
//
// A write's data is n UTF-16 units of UTF-8 text ("s": QuickJS writes a
// string's lone surrogate as three bytes, which the host keeps as U+FFFD)
// or n bytes ("b"). The reply is a line "O<bytes>" and that many bytes
// (the names, the content, or nothing for a write), "F<bytes>" and the
// error's message (a bad name, a missing file: the script may catch it),
// or "L0": the write went past a bound, the run ends with LimitFiles,
// which the host decides from its set, whatever the guest does next.

// Header kinds of a file record.
const (
	FileList  = "l"
	FileRead  = "r"
	FileWrite = "w"
)

// maxFileHeader bounds a file record's header in UTF-16 units: the name
// a guest sends is cut to MaxFileNameUnits, escaped at most six bytes a
// unit.
const maxFileHeader = 1024

// MaxFileNameUnits is the most of a name the guest sends: one unit past
// spi.MaxFileNameBytes, so that a longer name is still refused.
const MaxFileNameUnits = spi.MaxFileNameBytes + 1

var errMalformedFile = errors.New("the guest's file record is malformed")

// SetFiles gives the run's files to the stdin: its file records are
// served from set.
func (s *Stdin) SetFiles(set *runfiles.Set) { s.files = set }

// takeFile removes the first complete file record from the stream, does
// its operation on set and returns the reply, or false when there is
// none (a record still arriving stays where it is).
func (s *Stdout) takeFile(set *runfiles.Set) (head, body []byte, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.marker(RecFile)
	// The search starts where the last one left off: a native guest's
	// stdout is served chunk by chunk, and a large result must not be
	// scanned once per chunk.
	from := min(s.fileFrom, len(s.buf))
	i := bytes.Index(s.buf[from:], m)
	if i < 0 {
		s.fileFrom = max(0, len(s.buf)-len(m)+1)
		return nil, nil, false
	}
	i += from
	s.fileFrom = i // a record still arriving is searched for from its start
	// A malformed record is dropped with the rest of the stream.
	end := len(s.buf)
	defer func() {
		if ok {
			s.buf = append(s.buf[:i], s.buf[end:]...)
		}
	}()
	em := s.marker('E')
	rest := s.buf[i+len(m):]
	nl := bytes.IndexByte(rest, '\n')
	if nl < 0 && len(rest) <= 5 {
		return nil, nil, false
	}
	units := -1
	if nl >= 1 && nl <= 5 {
		units, _ = strconv.Atoi(string(rest[:nl]))
	}
	if units < 0 || units > maxFileHeader {
		return fileReply(nil, errMalformedFile)
	}
	rest = rest[nl+1:]
	n, st := wtf8Prefix(rest, units, false)
	switch {
	case st == short || st == whole && len(rest) < n+len(em):
		return nil, nil, false
	case st == bad || !bytes.HasPrefix(rest[n:], em):
		return fileReply(nil, errMalformedFile)
	}
	var h []json.RawMessage
	if json.Unmarshal(rest[:n], &h) != nil || len(h) == 0 {
		return fileReply(nil, errMalformedFile)
	}
	rest = rest[n+len(em):]
	recEnd := len(s.buf) - len(rest) // the end of the header's record
	var op, name, mode string
	_ = json.Unmarshal(h[0], &op)
	if len(h) > 2 && (json.Unmarshal(h[1], &name) != nil || json.Unmarshal(h[2], &mode) != nil) {
		return fileReply(nil, errMalformedFile)
	}
	switch {
	case op == FileList && len(h) == 1:
		end = recEnd
		names, err := json.Marshal(set.List())
		return fileReply(names, err)
	case op == FileRead && len(h) == 3 && (mode == "t" || mode == "b"):
		end = recEnd
		b, err := set.Read(name)
		if err == nil && mode == "t" && !utf8.Valid(b) {
			b = []byte(runfiles.Text(b))
		}
		return fileReply(b, err)
	case op == FileWrite && len(h) == 4 && (mode == "s" || mode == "b"):
		var size int
		if json.Unmarshal(h[3], &size) != nil || size < 0 {
			return fileReply(nil, errMalformedFile)
		}
		if mode == "s" {
			if size, st = wtf8Prefix(rest, size, true); st == bad {
				return fileReply(nil, errMalformedFile)
			}
		}
		if st == short || size+len(em) > len(rest) {
			return nil, nil, false
		}
		if !bytes.HasPrefix(rest[size:], em) {
			return fileReply(nil, errMalformedFile)
		}
		end = recEnd + size + len(em)
		data := rest[:size]
		return fileReply(nil, set.WriteFunc(name, size, func(dst []byte) {
			copy(dst, data)
			if mode == "s" {
				replaceSurrogates(dst)
			}
		}))
	}
	return fileReply(nil, errMalformedFile)
}

// fileReply is the reply to a file operation: its header line and body.
func fileReply(body []byte, err error) ([]byte, []byte, bool) {
	switch {
	case errors.Is(err, runfiles.ErrLimit):
		return []byte("L0\n"), nil, true
	case err != nil:
		body = []byte(err.Error())
	}
	head := make([]byte, 0, 16)
	if err != nil {
		head = append(head, 'F')
	} else {
		head = append(head, 'O')
	}
	head = strconv.AppendInt(head, int64(len(body)), 10)
	return append(head, '\n'), body, true
}

// What wtf8Prefix found.
const (
	whole = iota // the units are all there
	short        // the bytes ran out first
	bad          // a byte sequence no string encodes
)

// wtf8Prefix returns how many bytes of b encode exactly units UTF-16
// code units, as QuickJS writes a string: well-formed UTF-8, and, when
// surrogates, a lone surrogate as three bytes (0xED, 0xA0 to 0xBF, a
// continuation byte), one unit.
func wtf8Prefix(b []byte, units int, surrogates bool) (int, int) {
	n := 0
	for units > 0 {
		if n >= len(b) {
			return 0, short
		}
		if c := b[n]; c < utf8.RuneSelf {
			n++
			units--
			continue
		}
		if surrogates && isSurrogate(b[n:]) {
			n += 3
			units--
			continue
		}
		if !utf8.FullRune(b[n:]) {
			return 0, short
		}
		r, size := utf8.DecodeRune(b[n:])
		if r == utf8.RuneError && size <= 1 {
			return 0, bad
		}
		n += size
		if r >= 0x10000 {
			units -= 2
		} else {
			units--
		}
	}
	if units < 0 {
		return 0, bad
	}
	return n, whole
}

// isSurrogate reports whether b starts with a surrogate's three bytes.
func isSurrogate(b []byte) bool {
	return len(b) >= 3 && b[0] == 0xED && b[1] >= 0xA0 && b[1] <= 0xBF && b[2]&0xC0 == 0x80
}

// replaceSurrogates writes U+FFFD (three bytes too) over every
// surrogate's three bytes in b, which wtf8Prefix accepted.
func replaceSurrogates(b []byte) {
	if utf8.Valid(b) {
		return
	}
	for i := 0; i < len(b); {
		if isSurrogate(b[i:]) {
			copy(b[i:], "\uFFFD")
			i += 3
			continue
		}
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
}

// FileOp is the guest side of a file operation, for a guest written in
// Go whose stdout is w (unbuffered): it writes the file record of header
// (a JSON array, see above) and data (a write's bytes, nil otherwise),
// and reads the reply from r. It returns the reply's body, or failed and
// the error's message; limit reports that the write went past a bound
// and the run ends.
func FileOp(w io.Writer, r *bufio.Reader, n Nonce, header []byte, data []byte) (body []byte, failed, limit bool, err error) {
	if err := WriteRecord(w, n, RecFile, header); err != nil {
		return nil, false, false, err
	}
	if data != nil {
		if _, err := w.Write(data); err != nil {
			return nil, false, false, err
		}
		if _, err := io.WriteString(w, FramePrefix+string(n)+"E\n"); err != nil {
			return nil, false, false, err
		}
	}
	if c, err := r.Peek(1); err == nil && c[0] == 'L' {
		return nil, false, true, nil
	}
	body, failed, err = ReadReply(r)
	return body, failed, false, err
}
