package guest

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sandbank/sandbank/spi"
)

// FuzzStdout feeds the host's stdout sink arbitrary guest output, split at
// an arbitrary point, and checks what Record makes of it: it never panics,
// the split never changes the verdict, and a result or thrown body it
// accepts is well-formed UTF-8 that sits in the stream between its
// record's header and its end marker.
func FuzzStdout(f *testing.F) {
	seeds := []string{
		frame(testNonce, 'S', "") + frame(testNonce, 'R', `{"a":"é"}`),
		frame(testNonce, 'T', `["E","m"]`),
		frame(testNonce, 'M', ""),
		frame(testNonce, 'I', ""),
		frame(testNonce, 'C', ""),
		frame(testNonce, 'X', ""),
		"hello\n",
		frame("ffffffffffffffffffffffffffffffff", 'R', `"forged"`) + frame(testNonce, 'R', `"real"`),
		"junk\x1eSBK" + frame(testNonce, 'R', `1`) + "more",
		FramePrefix + string(testNonce) + "R5\n123" + FramePrefix + string(testNonce) + "E\n",
		FramePrefix + string(testNonce) + "R1\n1",
		FramePrefix + string(testNonce) + "R2\n😀" + FramePrefix + string(testNonce) + "E\n",
		FramePrefix + string(testNonce) + "R-1\n" + FramePrefix + string(testNonce) + "E\n",
	}
	for i, s := range seeds {
		f.Add([]byte(s), uint16(i*7))
	}
	f.Fuzz(func(t *testing.T, stream []byte, cut uint16) {
		whole := NewStdout(testNonce, 1<<20, nil)
		_, _ = whole.Write(stream)
		split := NewStdout(testNonce, 1<<20, nil)
		at := int(cut) % (len(stream) + 1)
		_, _ = split.Write(stream[:at])
		_, _ = split.Write(stream[at:])

		rec := whole.Record()
		if got := split.Record(); got.Kind != rec.Kind || !bytes.Equal(got.Body, rec.Body) {
			t.Fatalf("the split at %d changed the record: %q then %q", at, rec, got)
		}
		if whole.Started() != split.Started() {
			t.Fatalf("the split at %d changed Started", at)
		}
		switch rec.Kind {
		case 0, RecMemory, RecInputOOM, RecScriptOOM, RecProtocol, RecCPU:
			if rec.Body != nil {
				t.Fatalf("record %q has a body", rec.Kind)
			}
		case RecResult, RecThrew:
			if !utf8.Valid(rec.Body) {
				t.Fatalf("accepted a body that is not UTF-8: %q", rec.Body)
			}
			header := FramePrefix + string(testNonce) + string(rec.Kind)
			end := FramePrefix + string(testNonce) + "E"
			if !strings.Contains(string(stream), header) || !strings.Contains(string(stream), string(rec.Body)+end) {
				t.Fatalf("accepted a body that is not framed in the stream: %q", rec.Body)
			}
		default:
			t.Fatalf("unknown record kind %q", rec.Kind)
		}
	})
}

// FuzzUTF16Prefix checks utf16Prefix against a count made the slow way.
func FuzzUTF16Prefix(f *testing.F) {
	for _, s := range []string{"abc", "é😀x", "😀", "ab", "\xff", ""} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, b []byte, units uint8) {
		n, ok := utf16Prefix(b, int(units))
		if !ok {
			return
		}
		prefix := b[:n]
		if !utf8.Valid(prefix) {
			t.Fatalf("prefix %q is not UTF-8", prefix)
		}
		count := 0
		for _, r := range string(prefix) {
			if r >= 0x10000 {
				count += 2
			} else {
				count++
			}
		}
		if count != int(units) {
			t.Fatalf("prefix %q is %d units, want %d", prefix, count, units)
		}
	})
}

// FuzzStderr feeds the stderr splitter arbitrary guest output, split at
// an arbitrary point: it never panics, the split never changes the lines
// it hands over nor the text it passes on, every line is at most
// spi.MaxLogLineBytes, and what it holds stays within one record.
func FuzzStderr(f *testing.F) {
	var g bytes.Buffer
	_ = WriteLog(&g, testNonce, 2, 1, "a ✓")
	g.WriteString("engine text\n")
	_ = WriteLog(&g, testNonce, 4, 2, "")
	for i, s := range []string{g.String(), LogPrefix(testNonce) + "11\"x\"\n", LogPrefix(testNonce) + "11", "x" + FramePrefix, FramePrefix + LogPrefix(testNonce) + "11\"abc\"\n"} {
		f.Add([]byte(s), uint16(i*5))
	}
	f.Fuzz(func(t *testing.T, stream []byte, cut uint16) {
		run := func(parts ...[]byte) ([]string, string) {
			var sink lines
			diag := NewCapped(1 << 30)
			w := NewStderr(testNonce, &sink, diag)
			for _, p := range parts {
				_, _ = w.Write(p)
				if len(w.line) > MaxLogRecordBytes {
					t.Fatalf("the splitter holds %d bytes", len(w.line))
				}
			}
			return sink.got, diag.Head(1 << 30)
		}
		at := int(cut) % (len(stream) + 1)
		got, rest := run(stream)
		got2, rest2 := run(stream[:at], stream[at:])
		if !slices.Equal(got, got2) || rest != rest2 {
			t.Fatalf("the split at %d changed the output: %q %q, then %q %q", at, got, rest, got2, rest2)
		}
		for _, l := range got {
			if len(l) > len("error/stderr ")+spi.MaxLogLineBytes {
				t.Fatalf("a line of %d bytes", len(l))
			}
		}
	})
}
