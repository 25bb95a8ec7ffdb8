package guest

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/runfiles"
	"github.com/sandbank/sandbank/spi"
)

// fileRecord is a file record: the header, and a write's data when not
// nil.
func fileRecord(n Nonce, header string, data []byte) []byte {
	var b bytes.Buffer
	b.WriteString(frame(n, RecHostCall, header))
	rec := b.Bytes()
	// frame knows the host-call layout, which a file record shares.
	i := len(FramePrefix) + len(n)
	rec[i] = RecFile
	if data != nil {
		b.Write(data)
		b.WriteString(FramePrefix + string(n) + "E\n")
	}
	return b.Bytes()
}

// reply reads everything stdin serves now.
func reply(t *testing.T, in *Stdin) string {
	t.Helper()
	b, err := io.ReadAll(in)
	require.NoError(t, err)
	return string(b)
}

func filesStdin(maxFiles int, maxBytes int64) (*Stdout, *Stdin, *runfiles.Set) {
	out := NewStdout(testNonce, 1<<20, nil)
	in := NewStdin(context.Background(), nil, out, nil)
	set := runfiles.New(spi.Request{
		Files:  []spi.File{{Name: "a.txt", Data: []byte("h\xffi")}, {Name: "b.bin", Data: []byte{0, 1}}},
		Limits: spi.Limits{MaxOutFiles: maxFiles, MaxOutFileBytes: maxBytes},
	})
	in.SetFiles(set)
	return out, in, set
}

func TestStdinServesFileRecords(t *testing.T) {
	out, in, set := filesStdin(2, 9)
	for _, tc := range []struct {
		name, header string
		data         []byte
		want         string
	}{
		{"list", `["l"]`, nil, `O17` + "\n" + `["a.txt","b.bin"]`},
		{"read text", `["r","a.txt","t"]`, nil, "O5\nh\uFFFDi"},
		{"read bytes", `["r","b.bin","b"]`, nil, "O2\n\x00\x01"},
		{"read missing", `["r","c.txt","b"]`, nil, "F33\nno input file of that name: c.txt"},
		{"write bytes", `["w","z.bin","b",3]`, []byte{0, 0xff, 1}, "O0\n"},
		// A lone surrogate, as QuickJS writes it, is kept as U+FFFD.
		{"write text", `["w","s.txt","s",3]`, []byte("a\xed\xa0\x80é"), "O0\n"},
		{"bad name", `["w","../x","b",1]`, []byte("x"), "F48\nspi: invalid file name: \"/\" at byte 2"},
		{"malformed", `["q"]`, nil, "F36\nthe guest's file record is malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _ = out.Write(fileRecord(testNonce, tc.header, tc.data))
			got := reply(t, in)
			if tc.name == "bad name" {
				assert.Equal(t, "F", got[:1])
				assert.Contains(t, got, "invalid file name")
				return
			}
			assert.Equal(t, tc.want, got)
		})
	}
	assert.Equal(t, []spi.File{{Name: "s.txt", Data: []byte("a\uFFFDé")}, {Name: "z.bin", Data: []byte{0, 0xff, 1}}}, set.Files())
	assert.Empty(t, out.buf, "every record was taken")
}

func TestStdinFileRecordPastABound(t *testing.T) {
	out, in, set := filesStdin(1, 4)
	_, _ = out.Write(fileRecord(testNonce, `["w","f0","b",5]`, []byte("xxxxx")))
	assert.Equal(t, "L0\n", reply(t, in))
	assert.True(t, set.Exceeded())
	assert.Nil(t, set.Files(), "nothing past the bound is kept")
}

func TestStdinWaitsForAWholeFileRecord(t *testing.T) {
	rec := fileRecord(testNonce, `["w","f0","b",4]`, []byte("abcd"))
	for cut := 1; cut < len(rec); cut++ {
		out, in, set := filesStdin(1, 8)
		_, _ = out.Write(rec[:cut])
		assert.Equal(t, "", reply(t, in), "cut at %d: nothing to serve yet", cut)
		_, _ = out.Write(rec[cut:])
		assert.Equal(t, "O0\n", reply(t, in), "cut at %d", cut)
		assert.Equal(t, []spi.File{{Name: "f0", Data: []byte("abcd")}}, set.Files())
	}
}

func TestFileOpRoundTrip(t *testing.T) {
	out, in, set := filesStdin(1, 8)
	var w bytes.Buffer
	// The guest writes its record, the host serves it, the guest reads.
	do := func(header string, data []byte) ([]byte, bool, bool) {
		w.Reset()
		// FileOp reads the reply after writing: serve it from what it wrote.
		r := &lazyReply{out: out, in: in, w: &w}
		body, failed, limit, err := FileOp(&w, bufio.NewReader(r), testNonce, []byte(header), data)
		require.NoError(t, err)
		return body, failed, limit
	}
	body, failed, limit := do(`["r","b.bin","b"]`, nil)
	assert.Equal(t, []byte{0, 1}, body)
	assert.False(t, failed || limit)
	body, failed, _ = do(`["r","nope","b"]`, nil)
	assert.True(t, failed)
	assert.Contains(t, string(body), "no input file")
	_, failed, limit = do(`["w","f","b",3]`, []byte("abc"))
	assert.False(t, failed || limit)
	_, _, limit = do(`["w","g","b",1]`, []byte("x"))
	assert.True(t, limit)
	assert.Equal(t, []spi.File{{Name: "f", Data: []byte("abc")}}, set.Files())
}

// lazyReply hands what the guest wrote to the host's stdout when the
// guest first reads, then serves the host's reply.
type lazyReply struct {
	out  *Stdout
	in   *Stdin
	w    *bytes.Buffer
	done bool
}

func (l *lazyReply) Read(p []byte) (int, error) {
	if !l.done {
		l.done = true
		_, _ = l.out.Write(l.w.Bytes())
	}
	return l.in.Read(p)
}

// TestStdinFindsAFileRecordAfterAHostCallIsTaken: taking a host call
// moves what followed it, and the search for a file record starts over.
func TestStdinFindsAFileRecordAfterAHostCallIsTaken(t *testing.T) {
	out, in, set := filesStdin(1, 8)
	_, _ = out.Write([]byte(frame(testNonce, RecHostCall, `["probe","1"]`)))
	assert.Equal(t, "", reply(t, in), "no file record yet")
	_, _ = out.Write(fileRecord(testNonce, `["w","f0","b",1]`, []byte("x")))
	_, ok := out.TakeHostCall()
	require.True(t, ok)
	assert.Equal(t, "O0\n", reply(t, in))
	assert.Equal(t, []spi.File{{Name: "f0", Data: []byte("x")}}, set.Files())
}
