package conformance

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/fixtures"
	"github.com/sandbank/sandbank/spi"
)

// The fake's files: a small engine acting out the files fixtures as an
// honest backend does (fixtures/doc.go), and the ways a broken one
// departs from it.

// filesInBehavior answers files_in from the request's input files.
func filesInBehavior(_ context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
	v := map[string]any{"list": []string{}}
	names := []string{}
	for _, f := range req.Files {
		names = append(names, f.Name)
		switch f.Name {
		case "a.txt":
			v["a"] = string(f.Data)
		case "b.bin":
			sum := 0
			for _, b := range f.Data {
				sum += int(b)
			}
			v["blen"], v["bsum"] = len(f.Data), sum
		}
	}
	slices.Sort(names)
	v["list"] = names
	b, err := json.Marshal(v)
	return spi.OK(b), err
}

// filesOutBehavior writes files_out's two files.
func filesOutBehavior(context.Context, *fake, spi.Request) (spi.Outcome, error) {
	o := spi.OK(json.RawMessage(`true`))
	o.Files = filesOutWant()
	return o, nil
}

// filesEngine acts out files_bounds: the writes, the name rule, the
// bounds. Its fields break one rule each.
type filesEngine struct {
	acceptAnyName bool // a hostile name is written, not thrown
	silentRefusal bool // a hostile name is neither written nor thrown
	noBounds      bool // writes past the bounds go on
	extraFile     bool // an OK run returns one more file than written
	filesOnLimit  bool // a run ended by the bound returns its files
}

func (fe filesEngine) behavior(_ context.Context, _ *fake, req spi.Request) (spi.Outcome, error) {
	var in struct {
		Count int    `json:"count"`
		Bytes int    `json:"bytes"`
		Name  string `json:"name"`
	}
	if err := json.Unmarshal(req.Input, &in); err != nil {
		return spi.Threw("TypeError", "fake: bad input"), nil
	}
	written := map[string][]byte{}
	sorted := func() []spi.File {
		out := []spi.File{}
		for n, d := range written {
			out = append(out, spi.File{Name: n, Data: d})
		}
		slices.SortFunc(out, func(a, b spi.File) int { return strings.Compare(a.Name, b.Name) })
		return out
	}
	write := func(name string, data []byte) (over bool) {
		written[name] = data
		total := 0
		for _, d := range written {
			total += len(d)
		}
		return !fe.noBounds && (len(written) > req.Limits.MaxOutFiles || int64(total) > req.Limits.MaxOutFileBytes)
	}
	limited := func() spi.Outcome {
		o := spi.Limited(spi.LimitFiles)
		if fe.filesOnLimit {
			o.Files = sorted()
		}
		return o
	}
	threw := false
	switch {
	case spi.CheckFileName(in.Name) == nil || fe.acceptAnyName:
		if write(in.Name, []byte("x")) {
			return limited(), nil
		}
	case fe.silentRefusal:
	default:
		threw = true
	}
	for i := range in.Count {
		if write("f"+itoa(i), []byte(strings.Repeat("x", in.Bytes))) {
			return limited(), nil
		}
	}
	o := spi.OK(json.RawMessage(`{"threw":` + map[bool]string{true: "true", false: "false"}[threw] + `}`))
	o.Files = sorted()
	if fe.extraFile {
		o.Files = append(o.Files, spi.File{Name: "zz", Data: []byte("x")})
	}
	return o, nil
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// TestFilesCasesGated: a backend that does not declare Files sees the
// files cases skipped, with the reason.
func TestFilesCasesGated(t *testing.T) {
	cfg := newFakeConfig()
	cfg.caps.Files = false
	rep := check(t, cfg, &Options{Cases: []string{"files_in", "files_out", "files_bounds"}})
	require.Len(t, rep.Cases, 3)
	for _, c := range rep.Cases {
		assert.Equal(t, StatusSkip, c.Status, c.Name)
		assert.Contains(t, c.Reason, "gated by Files")
	}
}

// TestFilesWithoutFixturesRefused: a backend that declares Files with a
// fixture set lacking the files scripts fails each files case, naming
// the missing script.
func TestFilesWithoutFixturesRefused(t *testing.T) {
	set, err := fixtures.New("toy", ".toy", fstest.MapFS{"echo.toy": {Data: []byte("toy echo")}})
	require.NoError(t, err)
	cfg := newFakeConfig()
	cfg.caps.Language = "toy"
	cfg.set = set
	rep := check(t, cfg, &Options{Fixtures: &set, Cases: []string{"files_in", "files_out", "files_bounds"}})
	for _, name := range []string{"files_in", "files_out", "files_bounds"} {
		r := result(t, rep, name)
		assert.Equal(t, StatusFail, r.Status, name)
		assert.Contains(t, r.Reason, "the toy fixture set has no script "+name+".toy")
	}
}

// TestBrokenFilesBackends: a backend that lies about files fails exactly
// the case that checks the rule it breaks; one that does not hold the
// bounds is held to them by the effect.
func TestBrokenFilesBackends(t *testing.T) {
	all := []string{"files_in", "files_out", "files_bounds"}
	for _, tc := range []struct {
		name     string
		override map[string]behavior
		failed   string // "": every files case passes
		reason   string
	}{
		{
			name: "files_in lists the names unsorted",
			override: map[string]behavior{"files_in": func(context.Context, *fake, spi.Request) (spi.Outcome, error) {
				return spi.OK(json.RawMessage(`{"list":["b.bin","a.txt"],"a":"h\u00e9llo\n","blen":256,"bsum":32640}`)), nil
			}},
			failed: "files_in", reason: `files.list() must be the input files' names sorted`,
		},
		{
			name: "files_in loses a byte",
			override: map[string]behavior{"files_in": func(context.Context, *fake, spi.Request) (spi.Outcome, error) {
				return spi.OK(json.RawMessage(`{"list":["a.txt","b.bin"],"a":"h\u00e9llo\n","blen":255,"bsum":32385}`)), nil
			}},
			failed: "files_in", reason: "b.bin read as bytes must be the 256 bytes",
		},
		{
			name: "drops a file",
			override: map[string]behavior{"files_out": func(context.Context, *fake, spi.Request) (spi.Outcome, error) {
				o := spi.OK(json.RawMessage(`true`))
				o.Files = filesOutWant()[:1]
				return o, nil
			}},
			failed: "files_out", reason: `files_out must return out.txt (hello) and z.bin (0 1 2 255) in name order, got "out.txt" (5 bytes)`,
		},
		{
			name:     "returns extra files past the bound",
			override: map[string]behavior{"files_bounds": filesEngine{extraFile: true}.behavior},
			failed:   "files_bounds", reason: "under bounds of 3 files and 12 bytes must finish, got typed limitExceeded files",
		},
		{
			name:     "returns its files on failure",
			override: map[string]behavior{"files_bounds": filesEngine{filesOnLimit: true}.behavior},
			failed:   "files_bounds", reason: "past the bound of 3 files, must end in a typed limitExceeded files, got an untyped error",
		},
		{
			name:     "lets ../x through",
			override: map[string]behavior{"files_bounds": filesEngine{acceptAnyName: true}.behavior},
			failed:   "files_bounds", reason: `a write under the name "../x" must throw an error the script catches, got an untyped error`,
		},
		{
			name:     "refuses ../x without throwing",
			override: map[string]behavior{"files_bounds": filesEngine{silentRefusal: true}.behavior},
			failed:   "files_bounds", reason: `a write under the name "../x" must throw, got {"threw":false}`,
		},
		{
			// The effect re-checks the outcome: a backend that writes past
			// the bounds and reports OK still ends limitExceeded files.
			name:     "does not hold the bounds",
			override: map[string]behavior{"files_bounds": filesEngine{noBounds: true}.behavior},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := newFakeConfig()
			for stem, b := range tc.override {
				cfg.override[stem] = b
			}
			rep := check(t, cfg, &Options{Cases: all})
			for _, name := range all {
				r := result(t, rep, name)
				if name != tc.failed {
					assert.Equal(t, StatusPass, r.Status, "%s: %s", name, r.Reason)
					continue
				}
				assert.Equal(t, StatusFail, r.Status, r.Reason)
				assert.Contains(t, r.Reason, tc.reason)
				assert.True(t, strings.HasPrefix(r.Reason, name+": "), "the reason names the case: %s", r.Reason)
			}
		})
	}
}

// TestFilesUncatchableAndFileSystem: a set declaring that its language
// cannot catch an error expects a hostile write to end the run in a
// scriptError; one declaring a file-system idiom checks only that the
// hostile write made no output file.
func TestFilesUncatchableAndFileSystem(t *testing.T) {
	for _, tc := range []struct {
		marker string
		engine behavior
		want   Status
		reason string
	}{
		{filesUncatchable, filesEngine{}.behavior, StatusFail, "must end the run in a typed scriptError"},
		{filesUncatchable, func(ctx context.Context, f *fake, req spi.Request) (spi.Outcome, error) {
			var in struct{ Name string }
			_ = json.Unmarshal(req.Input, &in)
			if spi.CheckFileName(in.Name) != nil {
				return spi.Threw("Error", "files.write: invalid name"), nil
			}
			return filesEngine{}.behavior(ctx, f, req)
		}, StatusPass, ""},
		{filesFileSystem, filesEngine{silentRefusal: true}.behavior, StatusPass, ""},
		{filesFileSystem, filesEngine{acceptAnyName: true}.behavior, StatusFail, "an untyped error"},
	} {
		t.Run(tc.marker+" "+string(tc.want), func(t *testing.T) {
			cfg := newFakeConfig()
			set := withoutSkips(cfg.set)
			set.FS.(fstest.MapFS)[tc.marker] = &fstest.MapFile{Data: []byte("the reason")}
			cfg.set = set
			cfg.override["files_bounds"] = tc.engine
			rep := check(t, cfg, &Options{Fixtures: &set, Cases: []string{"files_bounds"}})
			r := result(t, rep, "files_bounds")
			assert.Equal(t, tc.want, r.Status, r.Reason)
			assert.Contains(t, r.Reason, tc.reason)
		})
	}
}

// filesBypass is a broken effect: it hands the backend a call's input
// files without checking them (the effect's own checks otherwise).
type filesBypass struct {
	recorder
	backend spi.Backend
	scripts effect.ScriptReader
}

func (f filesBypass) Evaluate(ctx context.Context, call effect.Call) ([]byte, error) {
	r, err := f.Run(ctx, call)
	if r == nil {
		return nil, err
	}
	return r.Value, err
}

func (f filesBypass) Run(ctx context.Context, call effect.Call) (*effect.Record, error) {
	if len(call.Files) == 0 || len(call.Files) == len(filesInInput()) {
		return f.recorder.Run(ctx, call)
	}
	script, err := f.scripts.ReadScript(ctx, call.Script)
	if err != nil {
		return nil, err
	}
	out, err := f.backend.Evaluate(ctx, spi.Request{Script: script, Input: call.Input.(json.RawMessage), Files: call.Files,
		Limits: spi.Limits{WallClock: time.Second, MemoryBytes: 1 << 20, MaxOutFiles: 64, MaxOutFileBytes: 1 << 20}})
	if err != nil {
		return nil, err
	}
	return &effect.Record{Value: out.Value}, nil
}

// TestHostileInputFilesNeedTheEffect: the kit's check that hostile input
// files never reach the backend fails behind an effect that lets them
// through.
func TestHostileInputFilesNeedTheEffect(t *testing.T) {
	orig := newEvaluator
	newEvaluator = func(s effect.ScriptReader, b spi.Backend, o *effect.Options) (evaluator, error) {
		ev, err := orig(s, b, o)
		if err != nil {
			return nil, err
		}
		return filesBypass{recorder: ev.(recorder), backend: b, scripts: s}, nil
	}
	t.Cleanup(func() { newEvaluator = orig })
	rep := check(t, newFakeConfig(), &Options{Cases: []string{"files_in", "files_bounds"}})
	assert.Equal(t, StatusPass, result(t, rep, "files_in").Status, result(t, rep, "files_in").Reason)
	r := result(t, rep, "files_bounds")
	assert.Equal(t, StatusFail, r.Status)
	assert.Contains(t, r.Reason, "files_bounds: input files with a parent path must be an invalid call, got a value")
}
