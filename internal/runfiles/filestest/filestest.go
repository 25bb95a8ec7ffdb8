// Package filestest holds the unit tests of the files idiom (docs/design.md,
// "Files") that every engine declaring spi.Capabilities.Files runs in its
// own tests: one table per language, so that the idiom is the same on
// every engine of a language. It is imported only from _test.go files.
package filestest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// Inputs are the input files every case gets: a.txt is UTF-8 text, b.bin
// the 256 bytes 0..255, c.txt holds a byte that is not UTF-8.
func Inputs() []spi.File {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return []spi.File{
		{Name: "a.txt", Data: []byte("h\u00e9llo\n")},
		{Name: "b.bin", Data: b},
		{Name: "c.txt", Data: []byte("a\xffb")},
	}
}

// Case is one script of the idiom and what its run must end with.
type Case struct {
	Name     string
	Script   string
	NoInputs bool // run without input files
	MaxFiles int  // Limits.MaxOutFiles (default 4)
	MaxBytes int64
	Want     spi.Outcome // Kind, Value (as JSON text, compared as JSON) or Limit
	Files    []spi.File  // the output files of an OK run
}

// Run runs every case on b, each in its own subtest.
func Run(t *testing.T, b spi.Backend, cases []Case) {
	t.Helper()
	require.True(t, b.Capabilities().Files, "the backend declares files")
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			req := spi.Request{
				Script: []byte(c.Script),
				Input:  json.RawMessage("null"),
				Files:  Inputs(),
				Limits: spi.Limits{WallClock: time.Minute, MemoryBytes: 256 << 20, MaxOutFiles: 4, MaxOutFileBytes: 1 << 10},
			}
			if c.NoInputs {
				req.Files = nil
			}
			if c.MaxFiles != 0 {
				req.Limits.MaxOutFiles = c.MaxFiles
			}
			if c.MaxBytes != 0 {
				req.Limits.MaxOutFileBytes = c.MaxBytes
			}
			out, err := b.Evaluate(context.Background(), req)
			require.NoError(t, err)
			require.Equal(t, c.Want.Kind, out.Kind, "outcome %+v", out)
			switch c.Want.Kind {
			case spi.KindOK:
				assert.JSONEq(t, string(c.Want.Value), string(out.Value))
				assert.Equal(t, c.Files, out.Files)
			case spi.KindLimit:
				assert.Equal(t, c.Want.Limit, out.Limit)
				assert.Nil(t, out.Files)
			default:
				assert.Nil(t, out.Files)
			}
		})
	}
}

func ok(v string) spi.Outcome { return spi.OK(json.RawMessage(v)) }

// JavaScript is the table of the global files object.
var JavaScript = []Case{
	{Name: "read text", Script: `files.read("a.txt")`, Want: ok(`"h\u00e9llo\n"`)},
	{Name: "read invalid UTF-8", Script: `files.read("c.txt")`, Want: ok(`"a\ufffdb"`)},
	{Name: "read bytes", Script: `const b = files.read("b.bin", "bytes"); let s = 0; for (const x of b) s += x; [b instanceof Uint8Array, b.length, s]`, Want: ok(`[true, 256, 32640]`)},
	{Name: "read bytes is a copy", Script: `files.read("b.bin", "bytes")[1] = 9; files.read("b.bin", "bytes")[1]`, Want: ok(`1`)},
	{Name: "list", Script: `files.list()`, Want: ok(`["a.txt", "b.bin", "c.txt"]`)},
	{Name: "list without inputs", Script: `files.list()`, NoInputs: true, Want: ok(`[]`)},
	{Name: "write", Script: `files.write("z.bin", new Uint8Array([0, 1, 2, 255])); files.write("out.txt", "h\u00e9"); true`,
		Want: ok(`true`), Files: []spi.File{{Name: "out.txt", Data: []byte("h\u00e9")}, {Name: "z.bin", Data: []byte{0, 1, 2, 255}}}},
	{Name: "write a view", Script: `files.write("v.bin", new Uint8Array([7, 8, 9, 10]).subarray(1, 3)); true`,
		Want: ok(`true`), Files: []spi.File{{Name: "v.bin", Data: []byte{8, 9}}}},
	{Name: "write replaces", Script: `files.write("a.txt", "xx"); files.write("a.txt", "yyy"); files.write("a.txt", "z"); true`, MaxBytes: 3,
		Want: ok(`true`), Files: []spi.File{{Name: "a.txt", Data: []byte("z")}}},
	{Name: "write the wrong type", Script: `try { files.write("a.txt", 5); false } catch (e) { e instanceof TypeError }`, Want: ok(`true`)},
	{Name: "read missing throws", Script: `try { files.read("nope.txt"); false } catch (e) { e instanceof Error && e.message.length > 0 }`, Want: ok(`true`)},
	{Name: "read missing uncaught", Script: `files.read("nope.txt")`, Want: spi.Outcome{Kind: spi.KindThrew}},
	{Name: "bad name throws catchably", Script: `
const bad = ["../x", "/etc/passwd", "a\u0000b", "", ".hidden", "a/b", "x".repeat(129)];
let threw = 0;
for (const n of bad) { try { files.write(n, "x"); } catch (e) { if (e instanceof Error) threw++; } }
try { files.read("../a.txt"); } catch (e) { if (e instanceof Error) threw++; }
threw`, Want: ok(`8`)},
	{Name: "past the count", MaxFiles: 2, Script: `
try { for (let i = 0; i < 3; i++) files.write("f" + i, "x"); } catch (e) {}
"caught"`, Want: spi.Limited(spi.LimitFiles)},
	{Name: "past the bytes", MaxBytes: 10, Script: `
try { files.write("f0", "x".repeat(6)); files.write("f1", "x".repeat(5)); } catch (e) {}
"caught"`, Want: spi.Limited(spi.LimitFiles)},
	{Name: "past a bound ends the run", MaxFiles: 1, Script: `
try { files.write("f0", "x"); files.write("f1", "x"); } catch (e) {}
for (;;) {}`, Want: spi.Limited(spi.LimitFiles)},
	{Name: "past the bytes at once", MaxBytes: 10, Script: `try { files.write("f0", new Uint8Array(1 << 20)); } catch (e) {} "caught"`,
		Want: spi.Limited(spi.LimitFiles)},
	{Name: "dropped when the run throws", Script: `files.write("out.txt", "x"); throw new Error("no")`, Want: spi.Outcome{Kind: spi.KindThrew}},
	{Name: "frozen", Script: `
"use strict";
let n = 0;
try { files.read = null; } catch (e) { n++; }
try { files.extra = 1; } catch (e) { n++; }
try { files = null; } catch (e) { n++; }
try { delete globalThis.files; } catch (e) { n++; }
[n, Object.isFrozen(files), typeof files.read]`, Want: ok(`[4, true, "function"]`)},
}

// Starlark is the table of the predeclared files module; each script
// is a main(input) whose body is the case's lines.
var Starlark = []Case{
	sk(Case{Name: "read text", Script: `return files.read("a.txt")`, Want: ok(`"h\u00e9llo\n"`)}),
	sk(Case{Name: "read invalid UTF-8", Script: `return files.read("c.txt")`, Want: ok(`"a\ufffdb"`)}),
	sk(Case{Name: "read bytes", Script: `b = files.read("b.bin", bytes=True)
s = 0
for x in b.elems():
    s += x
return [type(b), len(b), s]`, Want: ok(`["bytes", 256, 32640]`)}),
	sk(Case{Name: "read text explicitly", Script: `return files.read("a.txt", bytes=False)`, Want: ok(`"h\u00e9llo\n"`)}),
	sk(Case{Name: "list", Script: `return files.list()`, Want: ok(`["a.txt", "b.bin", "c.txt"]`)}),
	sk(Case{Name: "list without inputs", Script: `return files.list()`, NoInputs: true, Want: ok(`[]`)}),
	sk(Case{Name: "write", Script: `files.write("z.bin", b"\x00\x01\x02\xff")
files.write("out.txt", "h\u00e9")
return True`, Want: ok(`true`), Files: []spi.File{{Name: "out.txt", Data: []byte("h\u00e9")}, {Name: "z.bin", Data: []byte{0, 1, 2, 255}}}}),
	sk(Case{Name: "write replaces", MaxBytes: 3, Script: `files.write("a.txt", "xx")
files.write("a.txt", "yyy")
files.write("a.txt", "z")
return True`, Want: ok(`true`), Files: []spi.File{{Name: "a.txt", Data: []byte("z")}}}),
	sk(Case{Name: "write the wrong type", Script: `files.write("a.txt", 5)`, Want: spi.Outcome{Kind: spi.KindThrew}}),
	sk(Case{Name: "read missing throws", Script: `files.read("nope.txt")`, Want: spi.Outcome{Kind: spi.KindThrew}}),
	sk(Case{Name: "bad name throws", Script: `files.write("../x", "x")`, Want: spi.Outcome{Kind: spi.KindThrew}}),
	sk(Case{Name: "bad name read throws", Script: `files.read("/etc/passwd")`, Want: spi.Outcome{Kind: spi.KindThrew}}),
	sk(Case{Name: "past the count", MaxFiles: 2, Script: `return [files.write("f%d" % i, "x") for i in range(3)]`, Want: spi.Limited(spi.LimitFiles)}),
	sk(Case{Name: "past the bytes", MaxBytes: 10, Script: `files.write("f0", "x" * 6)
files.write("f1", "x" * 5)
return True`, Want: spi.Limited(spi.LimitFiles)}),
	sk(Case{Name: "past the bytes at once", MaxBytes: 10, Script: `files.write("f0", "x" * (1 << 20))
return True`, Want: spi.Limited(spi.LimitFiles)}),
	sk(Case{Name: "dropped when the run fails", Script: `files.write("out.txt", "x")
fail("no")`, Want: spi.Outcome{Kind: spi.KindThrew}}),
	sk(Case{Name: "frozen", Script: `files.read = None`, Want: spi.Outcome{Kind: spi.KindThrew}}),
}

// sk wraps c's script in main(input).
func sk(c Case) Case {
	lines := strings.Split(c.Script, "\n")
	c.Script = "def main(input):\n    " + strings.Join(lines, "\n    ") + "\n"
	return c
}
