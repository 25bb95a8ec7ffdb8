package temporal

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

// Files in the Temporal door (docs/design.md, "Files"). A request's input
// files travel in its payload (Request.Files), within the payload limit
// that CheckRequest and Execute apply to the whole request. Files too
// large for the payload travel by content address (Request.StoredFiles):
// the caller puts their bytes in the store the workers read scripts from
// (Options.Scripts, a storage.DirStore they share, say), and the worker
// reads them back, checked against their addresses and sizes, before the
// run. Either way the effect checks the names and bounds the files.
//
// Output files come back in the record (effect.Record.Files), within the
// payload limit like its value: a result over it is TypePayloadTooLarge.
// Their content addresses are in the record's receipt.

// The worker's bounds on what it reads from the store for one request's
// StoredFiles, before the effect sees them: it holds them all in memory
// at once. The effect's own bounds (effect.Options.MaxInputFiles and
// MaxInputFileBytes, by default lower) then apply to all the files.
const (
	maxStoredFiles     = 1024
	maxStoredFileBytes = 256 << 20
)

// ErrStoredFile is matched by the error of a request whose StoredFiles
// the worker cannot use: too many, too large, a name missing, or an
// address not in Options.Scripts. It matches effect.ErrInvalidCall too:
// the caller's mistake, not retried (TypeInvalidCall).
var ErrStoredFile = fmt.Errorf("sandbank/temporal: stored input file: %w", effect.ErrInvalidCall)

// inputFiles returns req's input files: those of its payload, then those
// it names by address, read from scripts. The bytes read must hash to
// their address and have the size named; anything else is an error of
// the store (infrastructure, retried). The names are the effect's to
// check, with the payload's.
func inputFiles(ctx context.Context, scripts effect.ScriptReader, req Request) ([]spi.File, error) {
	if len(req.StoredFiles) == 0 {
		return req.Files, nil
	}
	if len(req.StoredFiles) > maxStoredFiles {
		return nil, fmt.Errorf("%w: %d files, past the worker's bound of %d", ErrStoredFile, len(req.StoredFiles), maxStoredFiles)
	}
	var total int64
	for i, ref := range req.StoredFiles {
		if ref.Bytes < 0 || ref.Bytes > maxStoredFileBytes-total {
			return nil, fmt.Errorf("%w: more than %d bytes in all", ErrStoredFile, maxStoredFileBytes)
		}
		total += ref.Bytes
		if _, err := effect.ParseAddress(string(ref.Digest)); err != nil {
			return nil, fmt.Errorf("%w: file %d: malformed digest", ErrStoredFile, i)
		}
	}
	if scripts == nil {
		return nil, fmt.Errorf("%w: the worker has no store (Options.Scripts)", ErrStoredFile)
	}
	files := append(make([]spi.File, 0, len(req.Files)+len(req.StoredFiles)), req.Files...)
	for i, ref := range req.StoredFiles {
		b, err := scripts.ReadScript(ctx, ref.Digest)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("%w: file %d: %s is not in the worker's store", ErrStoredFile, i, ref.Digest)
		case err != nil:
			return nil, fmt.Errorf("sandbank/temporal: reading stored input file %d: %w", i, err)
		case int64(len(b)) != ref.Bytes || record.AddressOf(b) != ref.Digest:
			return nil, fmt.Errorf("sandbank/temporal: stored input file %d: the store's bytes are not %s", i, ref.Digest)
		}
		files = append(files, spi.File{Name: ref.Name, Data: b})
	}
	return files, nil
}
