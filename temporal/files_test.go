package temporal

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// filesActs returns activities over one fake engine that declares files
// and answers every run with its input files as output files, each
// renamed "out-NAME"; *got holds the input files of its last run.
func filesActs(t *testing.T, opts *Options, got *[]spi.File) *Activities {
	t.Helper()
	return filesActsWith(t, opts, func(_ context.Context, req spi.Request) (spi.Outcome, error) {
		*got = req.Files
		out := spi.OK(req.Input)
		for _, f := range req.Files {
			out.Files = append(out.Files, spi.File{Name: "out-" + f.Name, Data: f.Data})
		}
		return out, nil
	})
}

// filesActsWith returns activities over one fake engine that declares
// files and answers with behave.
func filesActsWith(t *testing.T, opts *Options, behave fakebackend.Behavior) *Activities {
	t.Helper()
	caps := fakebackend.Capabilities()
	caps.Files = true
	b := fakebackend.New(caps, behave)
	var r registry.Registry
	r.Register(registry.Entry{Engine: fakeEngine, Language: caps.Language, Capabilities: caps,
		Factory: func() (spi.Backend, error) { return b.Plain(), nil }})
	acts, err := NewActivities(&r, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = acts.Close() })
	return acts
}

// TestFilesInThePayloadAndByAddress: a request's input files in its
// payload and those it names by address in the worker's store reach the
// script as one list; its output files come back in the record.
func TestFilesInThePayloadAndByAddress(t *testing.T) {
	store, err := storage.NewMemoryStore(nil)
	require.NoError(t, err)
	big := make([]byte, 3<<20) // over the payload limit
	for i := range big {
		big[i] = byte(i)
	}
	addr, err := store.Put(big)
	require.NoError(t, err)
	var got []spi.File
	acts := filesActs(t, &Options{Scripts: store}, &got)

	req := fakeRequest(t, "ok", nil)
	req.Files = []spi.File{{Name: "data.csv", Data: []byte("a,b\n")}}
	req.StoredFiles = []record.FileRef{{Name: "big.bin", Digest: addr, Bytes: int64(len(big))}}
	require.NoError(t, CheckRequest(req, 0), "the request fits: the big file is not in it")
	_, err, attempts := runCase(t, acts, oneRunInput{Request: req, MaximumAttempts: 3}, nil)
	require.Error(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "big.bin", got[0].Name)
	assert.Equal(t, big, got[0].Data)
	assert.Equal(t, spi.File{Name: "data.csv", Data: []byte("a,b\n")}, got[1])

	// The big file does not fit in the result's payload: refused, not
	// retried; the small one comes back.
	_, err, attempts = runCase(t, acts, oneRunInput{Request: req, MaximumAttempts: 3}, nil)
	require.Error(t, err)
	assert.Equal(t, TypePayloadTooLarge, appError(t, err).Type())
	assert.Equal(t, 1, attempts)
	req.StoredFiles = nil
	rec, err, _ := runCase(t, acts, oneRunInput{Request: req, MaximumAttempts: 3}, nil)
	require.NoError(t, err)
	assert.Equal(t, []spi.File{{Name: "out-data.csv", Data: []byte("a,b\n")}}, rec.Files)
	require.Len(t, rec.Receipt.OutputFiles, 1)
	assert.Equal(t, record.AddressOf([]byte("a,b\n")), rec.Receipt.OutputFiles[0].Digest)
}

// lyingStore answers every address with the same bytes.
type lyingStore struct{}

func (lyingStore) ReadScript(context.Context, record.Address) ([]byte, error) {
	return []byte("other"), nil
}

// TestStoredFilesRefused: stored files the worker cannot use are refused
// before the run: an address not in the store, too many, too large, a
// malformed digest are the caller's mistake (not retried); bytes that do
// not hash to their address are the store's (retried).
func TestStoredFilesRefused(t *testing.T) {
	store, err := storage.NewMemoryStore(nil)
	require.NoError(t, err)
	missing := record.AddressOf([]byte("nowhere"))
	ref := record.FileRef{Name: "a", Digest: missing, Bytes: 7}
	many := make([]record.FileRef, maxStoredFiles+1)
	for i := range many {
		many[i] = ref
	}
	for name, c := range map[string]struct {
		refs    []record.FileRef
		scripts effect.ScriptReader
		typ     string
	}{
		"not in the store":  {[]record.FileRef{ref}, store, TypeInvalidCall},
		"no store":          {[]record.FileRef{ref}, nil, TypeInvalidCall},
		"too many":          {many, store, TypeInvalidCall},
		"too large":         {[]record.FileRef{{Name: "a", Digest: missing, Bytes: maxStoredFileBytes + 1}}, store, TypeInvalidCall},
		"negative size":     {[]record.FileRef{{Name: "a", Digest: missing, Bytes: -1}}, store, TypeInvalidCall},
		"malformed digest":  {[]record.FileRef{{Name: "a", Digest: "sha256:zz", Bytes: 1}}, store, TypeInvalidCall},
		"the store's bytes": {[]record.FileRef{ref}, lyingStore{}, TypeInfrastructure},
	} {
		t.Run(name, func(t *testing.T) {
			var got []spi.File
			acts := filesActs(t, &Options{Scripts: c.scripts}, &got)
			req := fakeRequest(t, "ok", nil)
			req.StoredFiles = c.refs
			_, err, attempts := runCase(t, acts, oneRunInput{Request: req, MaximumAttempts: 2}, nil)
			require.Error(t, err)
			assert.Equal(t, c.typ, appError(t, err).Type())
			if c.typ == TypeInvalidCall {
				assert.Equal(t, 1, attempts, "not retried")
			}
			assert.Nil(t, got, "the script never ran")
		})
	}
}

// TestHostileFileNames: input files the effect refuses (a path, an
// absolute path, a NUL, 10,000 files) end the activity at once, not
// retried, and the script never runs.
func TestHostileFileNames(t *testing.T) {
	many := make([]spi.File, 10000)
	for i := range many {
		many[i] = spi.File{Name: fmt.Sprintf("f%d", i)}
	}
	for name, c := range map[string]struct {
		files []spi.File
		typ   string
	}{
		"a path":       {[]spi.File{{Name: "../x"}}, TypeInvalidCall},
		"absolute":     {[]spi.File{{Name: "/etc/passwd"}}, TypeInvalidCall},
		"a NUL":        {[]spi.File{{Name: "a\x00b"}}, TypeInvalidCall},
		"10,000 files": {many, TypeOf(record.CodeInputTooLarge)},
	} {
		t.Run(name, func(t *testing.T) {
			var got []spi.File
			acts := filesActs(t, nil, &got)
			req := fakeRequest(t, "ok", nil)
			req.Files = c.files
			_, err, attempts := runCase(t, acts, oneRunInput{Request: req, MaximumAttempts: 3}, nil)
			require.Error(t, err)
			assert.Equal(t, c.typ, appError(t, err).Type())
			assert.Equal(t, 1, attempts)
			assert.Nil(t, got, "the script never ran")
		})
	}
}

// TestLimitFilesIsNotRetried: a script that wrote past its files bounds
// is the typed failure limitExceeded (files), attempted once, its failure
// and record read back from the error.
func TestLimitFilesIsNotRetried(t *testing.T) {
	acts := filesActsWith(t, nil, func(context.Context, spi.Request) (spi.Outcome, error) {
		return spi.Limited(spi.LimitFiles), nil
	})
	_, err, attempts := runCase(t, acts, oneRunInput{Request: fakeRequest(t, "ok", nil), MaximumAttempts: 3}, nil)
	require.Error(t, err)
	assert.Equal(t, 1, attempts)
	appErr := appError(t, err)
	assert.Equal(t, TypeOf(record.CodeLimitExceeded), appErr.Type())
	assert.True(t, appErr.NonRetryable())
	f, ok := FailureOf(err)
	require.True(t, ok)
	assert.Equal(t, record.LimitFiles, f.Kind)
	rec, ok := RecordOf(err)
	require.True(t, ok)
	assert.Equal(t, f, rec.Failure)
}
