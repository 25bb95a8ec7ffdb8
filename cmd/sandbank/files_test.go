package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/fixtures"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

// filesApp returns an app whose one engine, "files" (javascript, the
// default), declares files and answers every run with its input files
// copied to its output files, each renamed "out-NAME", and the input as
// its value; rec.files holds the input files of the last run.
func filesApp(t *testing.T) (*app, *filesRecorder) {
	t.Helper()
	rec := &filesRecorder{}
	caps := fakebackend.Capabilities()
	caps.Files = true
	echo := func(_ context.Context, req spi.Request) (spi.Outcome, error) {
		rec.files = req.Files
		out := spi.OK(req.Input)
		for _, f := range req.Files {
			out.Files = append(out.Files, spi.File{Name: "out-" + f.Name, Data: f.Data})
		}
		return out, nil
	}
	return &app{
		newRegistry: func() (*registry.Registry, error) {
			r := new(registry.Registry)
			r.Register(registry.Entry{Engine: "files", Language: "javascript", Capabilities: caps,
				Factory: func() (spi.Backend, error) {
					rec.last = fakebackend.New(caps, echo)
					return rec.last, nil
				}})
			return r, r.SetDefault("javascript", "files")
		},
		fixtures:  func(string) (*fixtures.Set, bool) { return nil, false },
		cpuBudget: func(string) spi.Factory { return nil },
	}, rec
}

// filesRecorder keeps the last backend filesApp's engine built, and the
// input files of its last run.
type filesRecorder struct {
	last  *fakebackend.Backend
	files []spi.File
}

// TestRunFilesInAndOut gives a run two input files (one by its base
// name, one named) and gets them back as output files in --out's
// directory, listed by --json with the receipt's digests.
func TestRunFilesInAndOut(t *testing.T) {
	a, rec := filesApp(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data.csv")
	require.NoError(t, os.WriteFile(data, []byte("a,b\n1,2\n"), 0o644))
	other := filepath.Join(dir, "whatever.bin")
	require.NoError(t, os.WriteFile(other, []byte{0, 1, 255}, 0o644))
	out := filepath.Join(dir, "out")
	p := script(t, "s.js", "x")

	res := cli(a, "", "run", "--json", "--file", data, "--file", "b.bin="+other, "--out", out, p)
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Equal(t, []spi.File{{Name: "b.bin", Data: []byte{0, 1, 255}}, {Name: "data.csv", Data: []byte("a,b\n1,2\n")}}, rec.files, "in name order")

	got, err := os.ReadFile(filepath.Join(out, "out-data.csv"))
	require.NoError(t, err)
	assert.Equal(t, "a,b\n1,2\n", string(got))
	got, err = os.ReadFile(filepath.Join(out, "out-b.bin"))
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 1, 255}, got)

	var obj struct {
		Files []struct {
			Name   string
			Digest record.Address
			Bytes  int64
			Path   string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &obj), res.stdout)
	require.Len(t, obj.Files, 2)
	assert.Equal(t, "out-b.bin", obj.Files[0].Name, "in name order")
	assert.Equal(t, record.AddressOf([]byte{0, 1, 255}), obj.Files[0].Digest)
	assert.Equal(t, int64(3), obj.Files[0].Bytes)
	assert.Equal(t, filepath.Join(out, "out-b.bin"), obj.Files[0].Path)
	assert.Equal(t, "out-data.csv", obj.Files[1].Name)

	// Without --out nothing is written, and stderr says so.
	res = cli(a, "", "run", "--file", data, p)
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Contains(t, res.stderr, "pass --out DIR")
}

// TestRunFileHostileNames: a name spi.CheckFileName refuses is a usage
// error found before any engine is built, and --out's directory is not
// even created.
func TestRunFileHostileNames(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.csv")
	require.NoError(t, os.WriteFile(data, []byte("x"), 0o644))
	hidden := filepath.Join(dir, ".hidden")
	require.NoError(t, os.WriteFile(hidden, []byte("x"), 0o644))
	spaced := filepath.Join(dir, "a b.csv")
	require.NoError(t, os.WriteFile(spaced, []byte("x"), 0o644))
	p := script(t, "s.js", "x")
	for _, arg := range []string{"../x=" + data, "/etc/passwd=" + data, "a/b=" + data, "=" + data, hidden, spaced, dir} {
		a, rec := filesApp(t)
		out := filepath.Join(t.TempDir(), "out")
		res := cli(a, "", "run", "--file", arg, "--out", out, p)
		assert.Equal(t, exitUsage, res.code, "%s: %s", arg, res.stderr)
		assertOneLine(t, res.stderr)
		assert.Contains(t, res.stderr, "--file", arg)
		assert.Nil(t, rec.last, "%s: no engine is built", arg)
		assert.NoDirExists(t, out, "%s: nothing is written", arg)
		assert.Empty(t, res.stdout)
	}
}

// TestRunFileTooManyFiles: 10,000 input files are refused by the effect's
// bound before the backend runs, and nothing is written.
func TestRunFileTooManyFiles(t *testing.T) {
	a, rec := filesApp(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "d")
	require.NoError(t, os.WriteFile(data, []byte("x"), 0o644))
	args := []string{"run", "--json"}
	for i := range 10000 {
		args = append(args, "--file", fmt.Sprintf("f%d=%s", i, data))
	}
	out := filepath.Join(dir, "out")
	res := cli(a, "", append(args, "--out", out, script(t, "s.js", "x"))...)
	assert.Equal(t, exitFailure, res.code, "the effect's inputTooLarge: %s %s", res.stdout, res.stderr)
	assert.Contains(t, res.stdout, `"code":"inputTooLarge"`)
	if rec.last != nil {
		assert.Zero(t, rec.last.Counts().Calls, "the backend never runs")
	}
	entries, err := os.ReadDir(out)
	if err == nil {
		assert.Empty(t, entries, "nothing is written")
	}
}

// TestRunOutMustBeEmpty: --out naming a directory that holds anything is
// refused before the run, and what is there is left as it is.
func TestRunOutMustBeEmpty(t *testing.T) {
	a, rec := filesApp(t)
	out := t.TempDir()
	keep := filepath.Join(out, "out-data.csv")
	require.NoError(t, os.WriteFile(keep, []byte("mine"), 0o644))
	res := cli(a, "", "run", "--out", out, script(t, "s.js", "x"))
	assert.Equal(t, exitUsage, res.code, res.stderr)
	assertOneLine(t, res.stderr)
	assert.Contains(t, res.stderr, "not empty")
	assert.Nil(t, rec.last, "no engine is built")
	b, err := os.ReadFile(keep)
	require.NoError(t, err)
	assert.Equal(t, "mine", string(b))

	notDir := filepath.Join(out, "out-data.csv")
	res = cli(a, "", "run", "--out", notDir, script(t, "s.js", "x"))
	assert.Equal(t, exitUsage, res.code, res.stderr)
}

// TestWriteOutNeverLeavesTheDirectory: whatever a record holds, writeOut
// joins no name spi.CheckFileName refuses to --out's directory, replaces
// no file, and leaves nothing behind when it fails.
func TestWriteOutNeverLeavesTheDirectory(t *testing.T) {
	rec := func(names ...string) *effect.Record {
		r := &effect.Record{}
		for _, n := range names {
			d := []byte("data of " + n)
			r.Files = append(r.Files, spi.File{Name: n, Data: d})
			r.Receipt.OutputFiles = append(r.Receipt.OutputFiles, record.FileRef{Name: n, Digest: record.AddressOf(d), Bytes: int64(len(d))})
		}
		return r
	}
	for _, bad := range []string{"../x", "/abs", "a\x00b", "a/b", ".", "..", ""} {
		parent := t.TempDir()
		out := filepath.Join(parent, "out")
		require.NoError(t, os.Mkdir(out, 0o755))
		f := &fileOptions{out: out}
		err := f.writeOut(rec("a.txt", bad))
		require.Error(t, err, "%q", bad)
		code, _ := classify(err)
		assert.Equal(t, exitUntyped, code)
		assertEmptyDir(t, out)
		entries, err := os.ReadDir(parent)
		require.NoError(t, err)
		assert.Len(t, entries, 1, "%q: nothing beside the directory", bad)
		assert.Empty(t, f.listed)
	}

	// A file that appeared in the directory during the run is left as it
	// is, and the files written before it are removed.
	out := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(out, "b.txt"), []byte("mine"), 0o644))
	f := &fileOptions{out: out}
	err := f.writeOut(rec("a.txt", "b.txt"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "b.txt appeared during the run")
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	b, err := os.ReadFile(filepath.Join(out, "b.txt"))
	require.NoError(t, err)
	assert.Equal(t, "mine", string(b))

	// A file the receipt does not name is not written.
	out = t.TempDir()
	r := rec("a.txt")
	r.Receipt.OutputFiles = nil
	require.Error(t, (&fileOptions{out: out}).writeOut(r))
	assertEmptyDir(t, out)
}

func assertEmptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Empty(t, names, "%s must be empty", dir)
}

// TestReadInputFileBoundsWhatItHolds: the command line never holds more
// than the bound it is given.
func TestReadInputFileBoundsWhatItHolds(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	require.NoError(t, os.WriteFile(p, []byte(strings.Repeat("x", 100)), 0o644))
	_, err := readInputFile(p, 99)
	require.Error(t, err)
	b, err := readInputFile(p, 100)
	require.NoError(t, err)
	assert.Len(t, b, 100)
}

// TestResumeWithFiles: a suspended run that was given input files is
// resumed with the same files again, and its output files are written
// as run writes them; without the files the resumption is refused.
func TestResumeWithFiles(t *testing.T) {
	a := resumeApp()
	dir := t.TempDir()
	data := filepath.Join(dir, "data.csv")
	require.NoError(t, os.WriteFile(data, []byte("a,b\n"), 0o644))
	wait := filepath.Join(dir, "wait.json")
	p := script(t, "s.js", "x")

	res := cli(a, "", "run", "--file", data, "--suspend", "approve", "--continuation", wait, p)
	require.Equal(t, exitSuspend, res.code, res.stderr)

	out := filepath.Join(dir, "out")
	res = cli(a, "", "resume", wait, "--answer", "true", "--suspend", "approve", "--out", out)
	assert.Equal(t, exitUsage, res.code, "without its files: %s", res.stderr)
	assert.Contains(t, res.stderr, "input files")
	assertEmptyDir(t, out)

	res = cli(a, "", "resume", wait, "--answer", "true", "--suspend", "approve", "--file", data, "--out", out, "--json")
	require.Equal(t, exitOK, res.code, res.stderr)
	b, err := os.ReadFile(filepath.Join(out, "out-data.csv"))
	require.NoError(t, err)
	assert.Equal(t, "a,b\n", string(b))
	assert.Contains(t, res.stdout, `"files":[{"name":"out-data.csv"`)
}

// resumeApp returns an app whose one engine, "files", declares files,
// host calls and determinism: its script calls the host function
// "approve" and returns the answer, its input files renamed "out-NAME"
// as its output files.
func resumeApp() *app {
	caps := fakebackend.Capabilities()
	caps.Files, caps.HostCalls, caps.Deterministic = true, true, true
	return &app{
		newRegistry: func() (*registry.Registry, error) {
			r := new(registry.Registry)
			r.Register(registry.Entry{Engine: "files", Language: "javascript", Capabilities: caps,
				Factory: func() (spi.Backend, error) {
					return fakebackend.New(caps, func(ctx context.Context, req spi.Request) (spi.Outcome, error) {
						v, err := req.Host.Call(ctx, "approve", json.RawMessage(`{"id":1}`))
						if err != nil {
							return spi.Threw("Error", err.Error()), nil
						}
						out := spi.OK(v)
						for _, f := range req.Files {
							out.Files = append(out.Files, spi.File{Name: "out-" + f.Name, Data: f.Data})
						}
						return out, nil
					}), nil
				}})
			return r, r.SetDefault("javascript", "files")
		},
		fixtures:  func(string) (*fixtures.Set, bool) { return nil, false },
		cpuBudget: func(string) spi.Factory { return nil },
	}
}
