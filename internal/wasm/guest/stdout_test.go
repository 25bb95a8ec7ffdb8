package guest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testNonce = Nonce("0123456789abcdef0123456789abcdef")

func frame(n Nonce, kind byte, body string) string {
	p := FramePrefix + string(n)
	switch kind {
	case RecResult, RecThrew, RecHostCall:
		units := len(utf16.Encode([]rune(body)))
		return p + string(kind) + itoa(units) + "\n" + body + p + "E\n"
	}
	return p + string(kind) + "\n"
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestNonceIsRandom(t *testing.T) {
	a, err := NewNonce()
	require.NoError(t, err)
	b, err := NewNonce()
	require.NoError(t, err)
	assert.Len(t, string(a), 32)
	assert.NotEqual(t, a, b)
}

func TestStdoutRecords(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		want         Record
	}{
		{"result", frame(testNonce, 'S', "") + frame(testNonce, 'R', `{"a":"é"}`), Record{Kind: 'R', Body: []byte(`{"a":"é"}`)}},
		{"thrown", frame(testNonce, 'T', `["E","m"]`), Record{Kind: 'T', Body: []byte(`["E","m"]`)}},
		{"memory", frame(testNonce, 'M', ""), Record{Kind: 'M'}},
		{"input", frame(testNonce, 'I', ""), Record{Kind: 'I'}},
		{"nothing", "hello\n", Record{}},
		{"another nonce is ignored", frame("ffffffffffffffffffffffffffffffff", 'R', `"forged"`) + frame(testNonce, 'R', `"real"`), Record{Kind: 'R', Body: []byte(`"real"`)}},
		{"noise around the record", "junk\x1eSBK" + frame(testNonce, 'R', `1`) + "more", Record{Kind: 'R', Body: []byte(`1`)}},
		{"short body", FramePrefix + string(testNonce) + "R5\n123" + FramePrefix + string(testNonce) + "E\n", Record{}},
		{"long body", FramePrefix + string(testNonce) + "R1\n123" + FramePrefix + string(testNonce) + "E\n", Record{}},
		{"no end marker", FramePrefix + string(testNonce) + "R1\n1", Record{}},
		{"bad length", FramePrefix + string(testNonce) + "Rx\n1" + FramePrefix + string(testNonce) + "E\n", Record{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStdout(testNonce, 1<<20, nil)
			// Byte by byte: records arrive in any split.
			for i := 0; i < len(tc.stream); i++ {
				_, _ = s.Write([]byte{tc.stream[i]})
			}
			assert.Equal(t, tc.want, s.Record())
		})
	}
}

func TestStdoutStartAndBound(t *testing.T) {
	starts := 0
	s := NewStdout(testNonce, 64, func() { starts++ })
	_, _ = s.Write([]byte("x" + FramePrefix + string(testNonce)))
	assert.False(t, s.Started())
	_, _ = s.Write([]byte("S\n"))
	_, _ = s.Write([]byte(frame(testNonce, 'S', "")))
	assert.True(t, s.Started())
	assert.Equal(t, 1, starts)
	n, err := s.Write([]byte(strings.Repeat("y", 100)))
	require.NoError(t, err)
	assert.Equal(t, 100, n, "the guest never sees a short write")
	assert.Positive(t, s.Dropped())
}

func TestUTF16Prefix(t *testing.T) {
	for _, tc := range []struct {
		in    string
		units int
		n     int
		ok    bool
	}{
		{"abc", 3, 3, true},
		{"é😀x", 4, 7, true}, // é: 2 bytes 1 unit; 😀: 4 bytes 2 units
		{"😀", 1, 0, false},  // half a pair
		{"ab", 3, 0, false},
		{"\xff", 1, 0, false},
	} {
		n, ok := utf16Prefix([]byte(tc.in), tc.units)
		assert.Equal(t, tc.ok, ok, tc.in)
		if tc.ok {
			assert.Equal(t, tc.n, n, tc.in)
		}
	}
}

// TestStdoutSeal: once sealed, the sink drops every write, so a record
// finished after the seal is never read; what came before stays.
func TestStdoutSeal(t *testing.T) {
	s := NewStdout(testNonce, 1<<20, nil)
	_, _ = s.Write([]byte(frame(testNonce, 'S', "")))
	s.Seal()
	_, _ = s.Write([]byte(frame(testNonce, 'R', `1`)))
	assert.True(t, s.Started())
	assert.Equal(t, Record{}, s.Record())
	assert.Positive(t, s.Dropped())
}

// TestStdoutTook: the script's time as the stream shows it runs from the
// start record to the last write kept, and is zero before the start.
func TestStdoutTook(t *testing.T) {
	s := NewStdout(testNonce, 1<<20, nil)
	_, _ = s.Write([]byte("noise"))
	assert.Zero(t, s.Took())
	_, _ = s.Write([]byte(frame(testNonce, 'S', "")))
	time.Sleep(20 * time.Millisecond)
	_, _ = s.Write([]byte(frame(testNonce, 'R', `1`)))
	assert.GreaterOrEqual(t, s.Took(), 20*time.Millisecond)
	took := s.Took()
	s.Seal()
	time.Sleep(time.Millisecond)
	_, _ = s.Write([]byte("after the seal"))
	assert.Equal(t, took, s.Took(), "a write dropped after the seal does not count")
}

// TestPayload: the nonce line, the script as a JSON string literal (invalid
// UTF-8 escaped as U+FFFD), then the input as given.
func TestPayload(t *testing.T) {
	got := string(Payload(testNonce, []byte("a\n\"b\"\xff"), []byte("{\n\"x\": 1}")))
	assert.Equal(t, string(testNonce)+"\n"+`"a\n\"b\"\ufffd"`+"\n{\n\"x\": 1}", got)
}

// TestSizedPayload: the input's length on a line of its own before the
// input, with "h" before it when the run has host functions.
func TestSizedPayload(t *testing.T) {
	got := string(SizedPayload(testNonce, []byte("a"), []byte("{\n\"x\": 1}"), false))
	assert.Equal(t, string(testNonce)+"\n\"a\"\n9\n{\n\"x\": 1}", got)
	got = string(SizedPayload(testNonce, []byte("1"), []byte("null"), true))
	assert.Equal(t, string(testNonce)+"\n\"1\"\nh4\nnull", got, "a run with host functions says so before the input's length")
}
