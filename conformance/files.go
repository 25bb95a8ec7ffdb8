package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/spi"
)

// The files cases (docs/design.md, "Files"; the fixture contract in
// package fixtures): what files_in is handed and must answer, what
// files_out must write, and the bounds files_bounds runs under.
const (
	// filesBoundCount and filesBoundBytes are files_bounds' output bounds
	// (Limits.MaxOutFiles and MaxOutFileBytes).
	filesBoundCount       = 3
	filesBoundBytes int64 = 12
	// filesHostileInputs is how many input files the effect is handed in
	// files_bounds' refusal of too many: far past the effect's default
	// bound of 64.
	filesHostileInputs = 10_000
	// filesUncatchable names the file by which a fixture set declares
	// that its language cannot catch an error: a write under a refused
	// name then ends the run in a typed scriptError instead of throwing
	// an error the script catches. Its text is the reason.
	filesUncatchable = "files_bounds.uncatchable"
	// filesFileSystem names the file by which a fixture set declares that
	// its language writes output files through the file system (Python:
	// the regular files under out/): a write under a hostile name may
	// then fail or land outside out/, so whether it threw is not checked,
	// only that it made no output file. Its text is the reason.
	filesFileSystem = "files_bounds.filesystem"
)

func needFiles(c spi.Capabilities) string {
	if c.Files {
		return ""
	}
	return "gated by Files: the backend does not declare that it takes and returns files"
}

// filesInInput are files_in's input files: UTF-8 text and every byte.
func filesInInput() []spi.File {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	return []spi.File{{Name: "b.bin", Data: all}, {Name: "a.txt", Data: []byte("h\u00e9llo\n")}}
}

// filesOutWant are the files files_out writes, in name order.
func filesOutWant() []spi.File {
	return []spi.File{{Name: "out.txt", Data: []byte("hello")}, {Name: "z.bin", Data: []byte{0, 1, 2, 255}}}
}

// filesRecorder is the effect of a files case, which needs the run's
// record (its files).
func (e *env) filesRecorder(ctx context.Context, stem string, sp **spy) (recorder, effect.Address, bool) {
	b, ok := e.mainBackend()
	if !ok {
		return nil, "", false
	}
	if sp != nil {
		*sp = newSpy(b)
		b = *sp
	}
	// The effect's own files bounds, whatever the base options say: the
	// cases hold the backend to those.
	ev, ok := e.effectFor(b, e.k.limits, func(o *effect.Options) { o.MaxInputFiles, o.MaxInputFileBytes = 0, 0 })
	if !ok {
		return nil, "", false
	}
	rec, isRecorder := ev.(recorder)
	if !isRecorder {
		e.failf("the effect in front of the backend returns no run record")
		return nil, "", false
	}
	addr, _, err := e.script(stem)
	if err != nil {
		e.failf("preparing fixture %s%s: %v", stem, e.k.set.Ext, err)
		return nil, "", false
	}
	return rec, addr, true
}

// caseFilesIn hands files_in two input files in reverse name order, text
// and every byte, and checks what the script read: the names sorted, the
// text decoded as UTF-8, and every byte intact. The run writes no file.
func caseFilesIn(ctx context.Context, e *env) {
	rec, addr, ok := e.filesRecorder(ctx, "files_in", nil)
	if !ok {
		return
	}
	r, err := rec.Run(ctx, effect.Call{Script: addr, Input: rawJSON(`{}`), Limits: e.k.limits, Files: filesInInput()})
	if err != nil || r == nil {
		e.failf("files_in must finish with a value, got %s", describe(nil, err))
		return
	}
	var got struct {
		List []string `json:"list"`
		A    *string  `json:"a"`
		BLen *int     `json:"blen"`
		BSum *int     `json:"bsum"`
	}
	dec := json.NewDecoder(bytes.NewReader(r.Value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil || got.A == nil || got.BLen == nil || got.BSum == nil {
		e.failf(`files_in must return {"list","a","blen","bsum"}, got %s`, clip(string(r.Value)))
		return
	}
	switch {
	case !slices.Equal(got.List, []string{"a.txt", "b.bin"}):
		e.failf(`files.list() must be the input files' names sorted, ["a.txt","b.bin"], got %q`, got.List)
	case *got.A != "h\u00e9llo\n":
		e.failf("a.txt read as text must be %q, got %q", "h\u00e9llo\n", clip(*got.A))
	case *got.BLen != 256 || *got.BSum != 32640:
		e.failf("b.bin read as bytes must be the 256 bytes 0..255 (sum 32640), got %d bytes summing to %d", *got.BLen, *got.BSum)
	case len(r.Files) != 0:
		e.failf("files_in writes no file, but the run returned %d", len(r.Files))
	default:
		e.passf("2 input files read: names sorted, UTF-8 text and 256 bytes intact")
	}
}

// caseFilesOut checks that files_out's two files come back, in name
// order, byte for byte, and that the receipt names each by its digest.
func caseFilesOut(ctx context.Context, e *env) {
	rec, addr, ok := e.filesRecorder(ctx, "files_out", nil)
	if !ok {
		return
	}
	r, err := rec.Run(ctx, effect.Call{Script: addr, Input: rawJSON(`{}`), Limits: e.k.limits})
	if err != nil || r == nil || string(r.Value) != "true" {
		e.failf("files_out must return true, got %s", describe(valueOf(r), err))
		return
	}
	want := filesOutWant()
	if !sameFiles(r.Files, want) {
		e.failf("files_out must return out.txt (hello) and z.bin (0 1 2 255) in name order, got %s", describeFiles(r.Files))
		return
	}
	for i, f := range want {
		if i >= len(r.Receipt.OutputFiles) || r.Receipt.OutputFiles[i] != (effect.FileRef{Name: f.Name, Digest: effect.AddressOf(f.Data), Bytes: int64(len(f.Data))}) {
			e.failf("the receipt's outputFiles must name %s by its digest, got %+v", f.Name, r.Receipt.OutputFiles)
			return
		}
	}
	e.passf("2 output files returned in name order, byte for byte, with their digests in the receipt")
}

// filesBoundsRun is one run of files_bounds.
type filesBoundsRun struct {
	count int
	bytes int64
	name  string
}

func (b filesBoundsRun) input() json.RawMessage {
	in, _ := json.Marshal(map[string]any{"count": b.count, "bytes": b.bytes, "name": b.name})
	return in
}

// filesHostileNames are names no write may create (spi.CheckFileName).
var filesHostileNames = []string{"../x", "/etc/passwd", "a\x00b", "a/b", ".hidden", ""}

// caseFilesBounds checks the files bounds and names: hostile input files
// are refused by the effect before the backend runs; under bounds of
// filesBoundCount files and filesBoundBytes bytes, a run that writes up
// to them (a name written twice counted once, at its last size)
// finishes, one past the count or the bytes ends limitExceeded (files),
// and a write under a hostile name throws and writes nothing.
func caseFilesBounds(ctx context.Context, e *env) {
	var sp *spy
	rec, addr, ok := e.filesRecorder(ctx, "files_bounds", &sp)
	if !ok {
		return
	}
	if !e.hostileInputs(ctx, rec, addr, sp) {
		return
	}
	limits := e.k.limits
	limits.MaxOutFiles, limits.MaxOutFileBytes = filesBoundCount, filesBoundBytes
	run := func(b filesBoundsRun) (*effect.Record, error) {
		return rec.Run(ctx, effect.Call{Script: addr, Input: b.input(), Limits: limits})
	}

	// At the bounds: f0 is written with "x", then replaced.
	at := filesBoundsRun{count: filesBoundCount, bytes: filesBoundBytes / filesBoundCount, name: "f0"}
	r, err := run(at)
	want := []spi.File{{Name: "f0", Data: []byte("xxxx")}, {Name: "f1", Data: []byte("xxxx")}, {Name: "f2", Data: []byte("xxxx")}}
	switch {
	case err != nil || r == nil:
		e.failf("writing %d files of %d bytes (f0 written twice) under bounds of %d files and %d bytes must finish, got %s",
			at.count, at.bytes, filesBoundCount, filesBoundBytes, describe(nil, err))
		return
	case string(r.Value) != `{"threw":false}`:
		e.failf(`writing under the name "f0" must not throw, got %s`, clip(string(r.Value)))
		return
	case !sameFiles(r.Files, want):
		e.failf("the run must return f0, f1 and f2 of 4 bytes each (a name written again replaced), got %s", describeFiles(r.Files))
		return
	}

	for _, past := range []struct {
		what string
		run  filesBoundsRun
	}{
		{"files", filesBoundsRun{count: filesBoundCount + 1, bytes: 1, name: "f0"}},
		{"bytes", filesBoundsRun{count: filesBoundCount, bytes: filesBoundBytes/filesBoundCount + 1, name: "f0"}},
	} {
		r, err := run(past.run)
		if !isLimit(err, effect.LimitFiles) {
			e.failf("writing %d files of %d bytes, past the bound of %d %s, must end in a typed limitExceeded files, got %s",
				past.run.count, past.run.bytes, map[string]int64{"files": filesBoundCount, "bytes": filesBoundBytes}[past.what], past.what, describe(valueOf(r), err))
			return
		}
		if r != nil && len(r.Files) != 0 {
			e.failf("a run past the files bound returned %d files", len(r.Files))
			return
		}
	}

	uncatchable, _ := fs.ReadFile(e.k.set.FS, filesUncatchable)
	fileSystem, _ := fs.ReadFile(e.k.set.FS, filesFileSystem)
	for _, name := range filesHostileNames {
		r, err := run(filesBoundsRun{count: 1, bytes: 1, name: name})
		if uncatchable != nil {
			if f, typed := asFailure(err); !typed || f.Code != effect.CodeScriptError {
				e.failf("a write under the name %q must end the run in a typed scriptError (the %s set declares: %s), got %s",
					name, e.k.set.Language, strings.TrimSpace(string(uncatchable)), describe(valueOf(r), err))
				return
			}
			continue
		}
		switch {
		case err != nil || r == nil:
			e.failf("a write under the name %q must throw an error the script catches, got %s", name, describe(nil, err))
			return
		case fileSystem == nil && string(r.Value) != `{"threw":true}`:
			e.failf("a write under the name %q must throw, got %s", name, clip(string(r.Value)))
			return
		case !sameFiles(r.Files, []spi.File{{Name: "f0", Data: []byte("x")}}):
			e.failf("a write under the name %q must write nothing, got %s", name, describeFiles(r.Files))
			return
		}
	}
	e.figure("maxOutFiles", filesBoundCount, "files", "==", filesBoundCount)
	e.figure("maxOutFileBytes", float64(filesBoundBytes), "bytes", "==", float64(filesBoundBytes))
	e.passf("hostile input files refused before the backend; the bounds of %d files and %d bytes held; %d hostile names wrote nothing",
		filesBoundCount, filesBoundBytes, len(filesHostileNames))
}

// hostileInputs checks that the effect refuses hostile input files
// before the backend runs: names that are paths or hold a NUL, a name
// twice, and filesHostileInputs files.
func (e *env) hostileInputs(ctx context.Context, rec recorder, addr effect.Address, sp *spy) bool {
	many := make([]spi.File, filesHostileInputs)
	for i := range many {
		many[i] = spi.File{Name: fmt.Sprintf("f%d", i)}
	}
	for _, in := range []struct {
		what    string
		files   []spi.File
		invalid bool // an invalid call; else inputTooLarge
	}{
		{"a parent path", []spi.File{{Name: "../x"}}, true},
		{"an absolute path", []spi.File{{Name: "/etc/passwd"}}, true},
		{"a NUL", []spi.File{{Name: "a\x00b"}}, true},
		{"a name twice", []spi.File{{Name: "a"}, {Name: "a"}}, true},
		{fmt.Sprintf("%d files", filesHostileInputs), many, false},
	} {
		_, err := rec.Run(ctx, effect.Call{Script: addr, Input: filesBoundsRun{name: "f0"}.input(), Limits: e.k.limits, Files: in.files})
		f, typed := asFailure(err)
		switch {
		case in.invalid && (typed || !errors.Is(err, effect.ErrInvalidCall)):
			e.failf("input files with %s must be an invalid call, got %s", in.what, describe(nil, err))
			return false
		case !in.invalid && (!typed || f.Code != effect.CodeInputTooLarge || f.Kind != effect.LimitInput):
			e.failf("%s must be a typed inputTooLarge (input), got %s", in.what, describe(nil, err))
			return false
		}
	}
	select {
	case <-sp.entered:
		e.failf("hostile input files reached the backend")
		return false
	default:
		return true
	}
}

// valueOf is a record's value, or nil.
func valueOf(r *effect.Record) []byte {
	if r == nil {
		return nil
	}
	return r.Value
}

// sameFiles reports whether got is want: the same names, in order, and
// the same bytes.
func sameFiles(got, want []spi.File) bool {
	return slices.EqualFunc(got, want, func(a, b spi.File) bool { return a.Name == b.Name && bytes.Equal(a.Data, b.Data) })
}

// describeFiles renders files as evidence: names and sizes.
func describeFiles(files []spi.File) string {
	if len(files) == 0 {
		return "no files"
	}
	s := make([]string, 0, min(len(files), 8))
	for i, f := range files {
		if i == 8 {
			s = append(s, fmt.Sprintf("… (%d files)", len(files)))
			break
		}
		s = append(s, fmt.Sprintf("%q (%d bytes)", clip(f.Name), len(f.Data)))
	}
	return strings.Join(s, ", ")
}
