package receipt

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// filesRun runs a fake backend declaring Files that answers out, with
// input files in, and returns the record.
func filesRun(t *testing.T, out spi.Outcome, in []spi.File) (*effect.Record, error) {
	t.Helper()
	caps := fakebackend.Capabilities()
	caps.Files = true
	fb := fakebackend.New(caps, fakebackend.Return(out))
	e, err := effect.New(new(storage.MemoryStore), fb, &effect.Options{MaxInputFiles: 2})
	require.NoError(t, err)
	return e.Run(context.Background(), effect.Call{Source: testScript, Input: "in", Files: in})
}

// TestVerifyChecksOutputFiles: Verify checks a record's output files
// against its receipt as it checks the value: each file's name, size and
// digest, in order, and none on a run that did not succeed; a stored
// record with files reads back (DecodeRecord) and verifies.
func TestVerifyChecksOutputFiles(t *testing.T) {
	out := okOutcome(`true`)
	out.Files = []spi.File{{Name: "out.txt", Data: []byte("hello")}, {Name: "z.bin", Data: []byte{0, 1, 2, 255}}}
	rec, err := filesRun(t, out, []spi.File{{Name: "a.txt", Data: []byte("in")}})
	require.NoError(t, err)
	require.NoError(t, Verify(rec, testScript, "in"))

	text, err := json.Marshal(rec)
	require.NoError(t, err)
	back, err := DecodeRecord(text)
	require.NoError(t, err)
	assert.Equal(t, rec.Files, back.Files)
	require.NoError(t, Verify(back, testScript, "in"))

	tamper := func(change func(r *effect.Record)) *effect.Record {
		c := *rec
		c.Files = []spi.File{{Name: "out.txt", Data: []byte("hello")}, {Name: "z.bin", Data: []byte{0, 1, 2, 255}}}
		c.Receipt.OutputFiles = append([]effect.FileRef(nil), rec.Receipt.OutputFiles...)
		change(&c)
		return &c
	}
	for name, tt := range map[string]struct {
		rec  *effect.Record
		want string
	}{
		"a byte changed": {tamper(func(r *effect.Record) { r.Files[0].Data = []byte("hellO") }), "digest"},
		"a file dropped": {tamper(func(r *effect.Record) { r.Files = r.Files[:1] }), "1 output files, the receipt names 2"},
		"a file renamed": {tamper(func(r *effect.Record) { r.Files[1].Name = "y.bin" }), "is not the receipt's"},
		"a file longer":  {tamper(func(r *effect.Record) { r.Files[1].Data = append(r.Files[1].Data, 0) }), "5 bytes"},
		"receipt ../x":   {tamper(func(r *effect.Record) { r.Receipt.OutputFiles[0].Name = "../x" }), "not a file name"},
		"receipt unsorted": {tamper(func(r *effect.Record) {
			r.Receipt.OutputFiles[0], r.Receipt.OutputFiles[1] = r.Receipt.OutputFiles[1], r.Receipt.OutputFiles[0]
		}), "increasing name order"},
		"past the bound": {tamper(func(r *effect.Record) { r.Receipt.Limits.MaxOutFiles = 1 }), "past its bounds"},
		"input ../x": {tamper(func(r *effect.Record) {
			r.Receipt.InputFiles = []effect.FileRef{{Name: "../x", Digest: effect.AddressOf(nil)}}
		}), "inputFiles[0] has a name"},
		"files on a failure": {tamper(func(r *effect.Record) {
			r.Value, r.Receipt.OutputFiles = nil, nil
			r.Receipt.Outcome = "scriptError"
			r.Failure = &effect.Failure{Code: effect.CodeScriptError, Message: "boom"}
			r.Receipt.OutputDigest = sha(`{"code":"scriptError","message":"boom"}`)
		}), "with output files"},
	} {
		t.Run(name, func(t *testing.T) {
			err := Verify(tt.rec, testScript, "in")
			require.ErrorIs(t, err, ErrRecordMismatch)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestVerifyInputFilesFailure: the refusal of too many input files is a
// typed failure whose record verifies.
func TestVerifyInputFilesFailure(t *testing.T) {
	rec, err := filesRun(t, okOutcome(`1`), []spi.File{{Name: "a"}, {Name: "b"}, {Name: "c"}})
	require.ErrorIs(t, err, effect.ErrInputTooLarge)
	require.NoError(t, Verify(rec, testScript, "in"))
}
