package effect

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/spi"
)

// filesCaps is the fake backend's declaration with Files.
func filesCaps() spi.Capabilities {
	c := fakebackend.Capabilities()
	c.Files = true
	return c
}

// filesFixture is an effect over a fake backend declaring Files that
// records the request it was handed and answers with answer.
func filesFixture(t *testing.T, opts *Options, answer func(spi.Request) spi.Outcome) (*Effect, *fakebackend.Backend, func() spi.Request) {
	t.Helper()
	var (
		mu   sync.Mutex
		last spi.Request
	)
	fb := fakebackend.New(filesCaps(), func(_ context.Context, req spi.Request) (spi.Outcome, error) {
		mu.Lock()
		last = req
		mu.Unlock()
		return answer(req), nil
	})
	e, err := New(newMemoryStore(), fb, opts)
	require.NoError(t, err)
	return e, fb, func() spi.Request {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}

// TestInputFilesReachTheBackend: the backend is handed a copy of the
// call's input files in name order, the output files' bounds resolved to
// the defaults, and the receipt names each input file by its content
// address, even when the run fails.
func TestInputFilesReachTheBackend(t *testing.T) {
	e, _, last := filesFixture(t, nil, func(spi.Request) spi.Outcome { return spi.Threw("Error", "boom") })
	files := []spi.File{{Name: "b.bin", Data: []byte{0, 1, 255}}, {Name: "a.txt", Data: []byte("h\u00e9llo\n")}}
	rec, err := e.Run(context.Background(), Call{Source: testScript, Input: 1, Files: files})
	requireFailure(t, err, CodeScriptError)
	req := last()
	require.Len(t, req.Files, 2)
	assert.Equal(t, "a.txt", req.Files[0].Name, "in name order")
	assert.Equal(t, files[0].Data, req.Files[1].Data)
	assert.NotSame(t, &files[0].Data[0], &req.Files[1].Data[0], "the backend gets a copy")
	assert.Equal(t, defaultMaxFiles, req.Limits.MaxOutFiles)
	assert.Equal(t, int64(defaultMaxFileBytes), req.Limits.MaxOutFileBytes)
	require.NotNil(t, rec)
	assert.Equal(t, []FileRef{
		{Name: "a.txt", Digest: AddressOf([]byte("h\u00e9llo\n")), Bytes: 7},
		{Name: "b.bin", Digest: AddressOf([]byte{0, 1, 255}), Bytes: 3},
	}, rec.Receipt.InputFiles)
	assert.Empty(t, rec.Receipt.OutputFiles)
	assert.Empty(t, rec.Files)
	assert.Equal(t, defaultMaxFiles, rec.Receipt.Limits.MaxOutFiles)
	assert.Equal(t, defaultMaxFiles, rec.Receipt.Limits.MaxInputFiles)
}

// TestInputFilesRefused: hostile names, a name twice, too many files or
// bytes, and files for a backend that does not declare Files are refused
// before the backend runs, each as its kind of error.
func TestInputFilesRefused(t *testing.T) {
	many := make([]spi.File, 10_000)
	for i := range many {
		many[i] = spi.File{Name: fmt.Sprintf("f%d", i)}
	}
	tests := []struct {
		name    string
		files   []spi.File
		invalid bool // an invalid call; else inputTooLarge
		want    string
	}{
		{"parent", []spi.File{{Name: "../x"}}, true, "input file 0"},
		{"absolute", []spi.File{{Name: "ok"}, {Name: "/etc/passwd"}}, true, "input file 1"},
		{"NUL", []spi.File{{Name: "a\x00b"}}, true, "byte 0x00"},
		{"empty", []spi.File{{Name: ""}}, true, "empty"},
		{"twice", []spi.File{{Name: "a", Data: []byte("1")}, {Name: "b"}, {Name: "a", Data: []byte("2")}}, true, "same name"},
		{"10,000 files", many, false, "10000 input files, past the bound of 64"},
		{"too many bytes", []spi.File{{Name: "a", Data: make([]byte, 600)}, {Name: "b", Data: make([]byte, 500)}}, false, "1100 bytes of input files, past the bound of 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, fb, _ := filesFixture(t, &Options{MaxInputFileBytes: 1000}, func(spi.Request) spi.Outcome { return okOutcome("1") })
			rec, err := e.Run(context.Background(), Call{Source: testScript, Input: 1, Files: tt.files})
			if tt.invalid {
				requireInvalid(t, err, ErrInvalidCall)
				assert.Nil(t, rec)
			} else {
				f := requireFailure(t, err, CodeInputTooLarge)
				assert.Equal(t, LimitInput, f.Kind)
				require.NotNil(t, rec)
				assert.Empty(t, rec.Receipt.InputFiles)
			}
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "\x00", "the name is not echoed")
			assert.Less(t, len(err.Error()), 300, "bounded")
			assert.Zero(t, fb.Calls(), "refused before the backend")
		})
	}

	plain := newFixture(t, nil, nil)
	_, err := plain.e.Evaluate(context.Background(), Call{Script: plain.addr, Input: 1, Files: []spi.File{{Name: "a"}}})
	requireInvalid(t, err, ErrInvalidCall)
	assert.Contains(t, err.Error(), "does not declare Files")
	plain.untouched(t)
}

// TestOutputFiles: a run's output files are in its record, in name order,
// and its receipt names each by its content address; a call's bounds
// reach the backend; a receipt without files is what it was before files.
func TestOutputFiles(t *testing.T) {
	out := []spi.File{{Name: "out.txt", Data: []byte("hello")}, {Name: "z.bin", Data: []byte{0, 1, 2, 255}}}
	e, _, last := filesFixture(t, nil, func(spi.Request) spi.Outcome {
		o := okOutcome("true")
		o.Files = out
		return o
	})
	rec, err := e.Run(context.Background(), Call{Source: testScript, Input: 1, Limits: spi.Limits{MaxOutFiles: 2, MaxOutFileBytes: 9}})
	require.NoError(t, err)
	assert.Equal(t, out, rec.Files)
	assert.NotSame(t, &out[0].Data[0], &rec.Files[0].Data[0], "the record owns its copy")
	assert.Equal(t, []FileRef{
		{Name: "out.txt", Digest: AddressOf([]byte("hello")), Bytes: 5},
		{Name: "z.bin", Digest: AddressOf([]byte{0, 1, 2, 255}), Bytes: 4},
	}, rec.Receipt.OutputFiles)
	assert.Equal(t, spi.Limits{WallClock: DefaultWallClock, MemoryBytes: DefaultMemoryBytes, MaxOutFiles: 2, MaxOutFileBytes: 9}, last().Limits)
	assert.Equal(t, 2, rec.Receipt.Limits.MaxOutFiles)
	v, err := e.Evaluate(context.Background(), Call{Source: testScript, Input: 1})
	require.NoError(t, err)
	assert.Equal(t, "true", string(v), "Evaluate gives the same value")

	plain := newFixture(t, fakebackend.Return(okOutcome("1")), nil)
	rec, err = plain.e.Run(context.Background(), Call{Script: plain.addr, Input: 1})
	require.NoError(t, err)
	text, err := rec.Receipt.Canonical()
	require.NoError(t, err)
	for _, name := range []string{"inputFiles", "outputFiles", "maxOutFiles", "maxInputFiles", "Files"} {
		assert.NotContains(t, string(text), name, "a run without files has the receipt it had before files")
	}
	assert.Equal(t, spi.Limits{WallClock: DefaultWallClock, MemoryBytes: DefaultMemoryBytes}, plain.fb.LastRequest().Limits,
		"a backend without Files gets no files bounds")
}

// TestOutputFilesNotBelieved: the effect checks the backend's output
// files again. Past a bound the run is limitExceeded (files), decided by
// the effect whatever the backend reported; a malformed list, or files on
// an outcome that is not OK or from a backend that does not declare
// Files, is an untyped error.
func TestOutputFilesNotBelieved(t *testing.T) {
	f := func(names ...string) []spi.File {
		out := make([]spi.File, len(names))
		for i, n := range names {
			out[i] = spi.File{Name: n, Data: []byte("xx")}
		}
		return out
	}
	ok := func(files []spi.File) spi.Outcome { o := okOutcome("1"); o.Files = files; return o }
	threw := spi.Threw("Error", "boom")
	threw.Files = f("a")
	limited := spi.Limited(spi.LimitCPU)
	limited.Files = f("a")
	tests := []struct {
		name  string
		out   spi.Outcome
		limit string // the effect decides limitExceeded (files); else untyped
	}{
		{"past the count", ok(f("a", "b", "c")), "3 output files, past the bound of 2"},
		{"past the bytes", ok([]spi.File{{Name: "a", Data: make([]byte, 11)}}), "11 bytes of output files, past the bound of 10"},
		{"parent name", ok(f("../x")), ""},
		{"absolute name", ok(f("/etc/passwd")), ""},
		{"NUL", ok(f("a\x00b")), ""},
		{"out of order", ok(f("b", "a")), ""},
		{"twice", ok(f("a", "a")), ""},
		{"on a throw", threw, ""},
		{"on a limit", limited, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _, _ := filesFixture(t, nil, func(spi.Request) spi.Outcome { return tt.out })
			rec, err := e.Run(context.Background(), Call{Source: testScript, Input: 1, Limits: spi.Limits{MaxOutFiles: 2, MaxOutFileBytes: 10}})
			if tt.limit != "" {
				fl := requireFailure(t, err, CodeLimitExceeded)
				assert.Equal(t, LimitFiles, fl.Kind)
				assert.Contains(t, fl.Reason, tt.limit)
				assert.Equal(t, "files", rec.Receipt.LimitKind)
			} else {
				requireUntyped(t, err)
				assert.Equal(t, OutcomeInfrastructure, rec.Receipt.Outcome)
			}
			assert.Empty(t, rec.Files)
			assert.Empty(t, rec.Receipt.OutputFiles)
		})
	}

	plain := newFixture(t, fakebackend.Return(ok(f("a"))), nil)
	_, err := plain.call(context.Background(), 1)
	requireUntyped(t, err)
	assert.Contains(t, err.Error(), "output files")
}

// TestFilesLimitsChecked: the files bounds of options and calls are
// checked like every other limit.
func TestFilesLimitsChecked(t *testing.T) {
	for _, o := range []Options{{MaxInputFiles: -1}, {MaxInputFileBytes: -1}, {Limits: spi.Limits{MaxOutFiles: -1}}, {Limits: spi.Limits{MaxOutFileBytes: -1}}} {
		_, err := New(newMemoryStore(), fakebackend.New(filesCaps(), nil), &o)
		requireInvalid(t, err, ErrInvalidLimits)
	}
	e, fb, _ := filesFixture(t, &Options{Limits: spi.Limits{MaxOutFiles: 3, MaxOutFileBytes: 100}}, func(spi.Request) spi.Outcome { return okOutcome("1") })
	for _, l := range []spi.Limits{{MaxOutFiles: 4}, {MaxOutFileBytes: 101}, {MaxOutFiles: -1}, {MaxOutFileBytes: -1}} {
		_, err := e.Evaluate(context.Background(), Call{Source: testScript, Input: 1, Limits: l})
		requireInvalid(t, err, ErrInvalidLimits)
	}
	assert.Zero(t, fb.Calls())
}

// TestResumeChecksInputFiles: a durable run resumes only with the input
// files of the run it resumes (their names, digests and sizes).
func TestResumeChecksInputFiles(t *testing.T) {
	r := newRelay()
	r.deterministic, r.files = true, true
	e, err := New(newMemoryStore(), r, &Options{Host: HostFuncs{"f": func(context.Context, json.RawMessage) (any, error) {
		return nil, Suspend("later")
	}}})
	require.NoError(t, err)
	in := relayInput(false, relayCall{"f", json.RawMessage(`1`)})
	files := []spi.File{{Name: "a.txt", Data: []byte("one")}}
	call := durableCall(in)
	call.Files = files
	rec, err := e.Run(context.Background(), call)
	require.ErrorIs(t, err, ErrSuspended)
	require.Len(t, rec.Receipt.InputFiles, 1)
	suspended := rec.Receipt
	for name, other := range map[string][]spi.File{
		"the same":      files,
		"other content": {{Name: "a.txt", Data: []byte("two")}},
		"other name":    {{Name: "b.txt", Data: []byte("one")}},
		"none":          nil,
	} {
		t.Run(name, func(t *testing.T) {
			resumes := suspended
			call := durableCall(in, HostCall{Name: "f", Args: json.RawMessage(`1`), Outcome: HostCallOK, Answer: json.RawMessage(`1`)})
			call.Durable.Resumes, call.Files = &resumes, other
			_, err := e.Run(context.Background(), call)
			if name == "the same" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalidHost)
			assert.Contains(t, err.Error(), "input files")
		})
	}
}
