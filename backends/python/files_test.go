//go:build linux

package python_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/python"
	"github.com/sandbank/sandbank/spi"
)

// evalFiles runs script with input files under files bounds.
func evalFiles(t *testing.T, b *python.Backend, script string, files []spi.File, maxFiles int, maxBytes int64) spi.Outcome {
	t.Helper()
	out, err := b.Evaluate(context.Background(), spi.Request{
		Script: []byte(script),
		Input:  json.RawMessage(`null`),
		Files:  files,
		Limits: spi.Limits{WallClock: 20 * time.Second, MemoryBytes: 64 << 20, MaxOutFiles: maxFiles, MaxOutFileBytes: maxBytes},
	})
	require.NoError(t, err)
	return out
}

// TestFilesInAndOut: input files are read-only in the working directory
// by name, out/ is there and empty, and the regular files written under
// it come back in name order.
func TestFilesInAndOut(t *testing.T) {
	b := newBackend(t)
	defer b.Close()
	bin := make([]byte, 256)
	for i := range bin {
		bin[i] = byte(i)
	}
	script := `import os
a = open("a.txt", encoding="utf-8").read()
b = open("b.bin", "rb").read()
try:
    open("a.txt", "w")
    writable = True
except PermissionError:
    writable = False
listed = sorted(os.listdir("."))
out = os.listdir("out")
with open("out/z.bin", "wb") as f:
    f.write(bytes([0, 1, 2, 255]))
with open("out/out.txt", "w") as f:
    f.write("hello")
{"a": a, "blen": len(b), "bsum": sum(b), "writable": writable, "listed": listed, "out": out}`
	out := evalFiles(t, b, script, []spi.File{{Name: "a.txt", Data: []byte("h\u00e9llo\n")}, {Name: "b.bin", Data: bin}}, 4, 1<<10)
	require.Equal(t, spi.KindOK, out.Kind, "%+v", out)
	assert.JSONEq(t, `{"a":"h\u00e9llo\n","blen":256,"bsum":32640,"writable":false,"listed":["a.txt","b.bin","out"],"out":[]}`, string(out.Value))
	assert.Equal(t, []spi.File{{Name: "out.txt", Data: []byte("hello")}, {Name: "z.bin", Data: []byte{0, 1, 2, 255}}}, out.Files)

	// A run that throws returns no files.
	out = evalFiles(t, b, "open('out/x', 'w').write('x')\nraise ValueError('no')", nil, 4, 1<<10)
	assert.Equal(t, spi.KindThrew, out.Kind)
	assert.Empty(t, out.Files)
	// Without output files, none.
	out = evalFiles(t, b, "1", nil, 4, 1<<10)
	assert.Equal(t, spi.KindOK, out.Kind)
	assert.Empty(t, out.Files)
}

// TestFilesBounds: past the count or the bytes, the files limit; an
// entry of out/ that is not a regular file with a valid name is left
// out with a warning in the run's log, the symbolic link never
// followed, and the run goes on; input files that cannot fit in the
// run's /tmp, inputTooLarge; one named out, FileExistsError.
func TestFilesBounds(t *testing.T) {
	b := newBackend(t)
	defer b.Close()
	write := func(n, size int) string {
		return "for i in range(" + strconv.Itoa(n) + "):\n    open('out/f%d' % i, 'w').write('x' * " + strconv.Itoa(size) + ")\n"
	}
	for _, tc := range []struct {
		name     string
		script   string
		files    []spi.File
		kind     spi.OutcomeKind
		limit    spi.LimitKind
		errName  string
		contains string // KindThrew: in the message; KindOK: in a warning line
		nfiles   int
	}{
		{name: "at the count", script: write(3, 10), kind: spi.KindOK, nfiles: 3},
		{name: "past the count", script: write(4, 10), kind: spi.KindLimit, limit: spi.LimitFiles},
		{name: "at the bytes", script: write(2, 50), kind: spi.KindOK, nfiles: 2},
		{name: "past the bytes", script: write(2, 51), kind: spi.KindLimit, limit: spi.LimitFiles},
		{name: "one file past the bytes", script: write(1, 1<<20), kind: spi.KindLimit, limit: spi.LimitFiles},
		{name: "same name again", script: "open('out/a', 'w').write('x' * 90)\nopen('out/a', 'w').write('y' * 100)", kind: spi.KindOK, nfiles: 1},
		{name: "invalid name", script: "open('out/.hidden', 'w').write('x')\nopen('out/a', 'w').write('y')", kind: spi.KindOK, nfiles: 1, contains: "not an output file: spi: invalid file name"},
		{name: "space in name", script: "open('out/my chart.png', 'w').write('x')", kind: spi.KindOK, contains: "not an output file: spi: invalid file name: ' ' at byte 2"},
		{name: "directory", script: "import os\nos.mkdir('out/d')\nopen('out/d/x', 'w').write('x')", kind: spi.KindOK, contains: "out/d is a directory, not an output file"},
		{name: "symbolic link", script: "import os\nopen('/tmp/s', 'w').write('s')\nos.symlink('/tmp/s', 'out/l')", kind: spi.KindOK, contains: "out/l is a symbolic link, not an output file"},
		{name: "fifo", script: "import os\nos.mkfifo('out/p')", kind: spi.KindOK, contains: "out/p is not a regular file, not an output file"},
		{name: "out is a link", script: "import os\nos.rmdir('out')\nos.symlink('/usr/lib', 'out')", kind: spi.KindOK, contains: "out/ is not a directory: no output files"},
		{name: "out removed", script: "import os\nos.rmdir('out')", kind: spi.KindOK},
		{name: "an input file named out", script: "1", files: []spi.File{{Name: "out", Data: []byte("x")}}, kind: spi.KindThrew, errName: "FileExistsError", contains: "named out"},
		{name: "input files past /tmp", script: "1", files: []spi.File{{Name: "big", Data: make([]byte, python.DefaultScratchBytes)}}, kind: spi.KindInputTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &warnings{}
			out, err := b.Evaluate(context.Background(), spi.Request{
				Script: []byte(tc.script), Input: json.RawMessage(`null`), Files: tc.files, Logs: logs,
				Limits: spi.Limits{WallClock: 20 * time.Second, MemoryBytes: 64 << 20, MaxOutFiles: 3, MaxOutFileBytes: 100},
			})
			require.NoError(t, err)
			require.Equal(t, tc.kind, out.Kind, "%+v", out)
			switch tc.kind {
			case spi.KindLimit:
				assert.Equal(t, tc.limit, out.Limit)
			case spi.KindThrew:
				assert.Equal(t, tc.errName, out.Name)
				assert.Contains(t, out.Message, tc.contains)
			case spi.KindOK:
				if tc.contains != "" {
					assert.Contains(t, logs.text(), tc.contains)
				} else {
					assert.Empty(t, logs.text())
				}
			}
			assert.Len(t, out.Files, tc.nfiles)
		})
	}
}

// warnings keeps the warning lines of a run's log.
type warnings struct {
	mu    sync.Mutex
	lines []string
}

func (w *warnings) Log(level spi.LogLevel, _ spi.LogStream, line string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if level == spi.LevelWarn {
		w.lines = append(w.lines, line)
	}
	return true
}

func (w *warnings) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, "\n")
}
