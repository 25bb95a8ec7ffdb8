package effect

// This file is what the effect owns of files (docs/design.md, "Files"):
// the bounds and names of a call's input files, the check of the output
// files a backend returns, and their content addresses in the receipt.
// Names are spi.CheckFileName's, the one rule every engine and door uses.

import (
	"bytes"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

// The default bounds of a call's input files (Options.MaxInputFiles,
// MaxInputFileBytes) and of a run's output files (spi.Limits.MaxOutFiles,
// MaxOutFileBytes): 64 files, 16 MiB in all.
const (
	defaultMaxFiles     = 64
	defaultMaxFileBytes = 16 << 20
)

// errFilesNotDeclared refuses a call with input files on a backend that
// does not declare spi.Capabilities.Files.
var errFilesNotDeclared = invalid(ErrInvalidCall, "effect: the call has input files, but the backend does not declare Files")

// inputFiles checks a call's input files and returns them as the backend
// is handed them: copied (the caller's may change while the run reads
// them) and in name order. Past Options.MaxInputFiles or
// MaxInputFileBytes the call is the typed failure inputTooLarge
// (LimitInput, the bound in its Reason); a name spi.CheckFileName refuses,
// or one given twice, is an invalid call. The count is checked before
// anything is read, so a call with many files costs nothing more.
func (e *Effect) inputFiles(files []spi.File) ([]spi.File, error) {
	if len(files) == 0 {
		return nil, nil
	}
	if !e.caps.Files {
		return nil, errFilesNotDeclared
	}
	if len(files) > e.maxInFiles {
		return nil, &Failure{Code: record.CodeInputTooLarge, Kind: record.LimitInput,
			Reason: strconv.Itoa(len(files)) + " input files, past the bound of " + strconv.Itoa(e.maxInFiles)}
	}
	var total int64
	for i, f := range files {
		if err := spi.CheckFileName(f.Name); err != nil {
			return nil, invalid(ErrInvalidCall, "effect: input file "+strconv.Itoa(i)+": "+err.Error())
		}
		total += int64(len(f.Data))
	}
	if total > e.maxInFileBytes {
		return nil, &Failure{Code: record.CodeInputTooLarge, Kind: record.LimitInput,
			Reason: strconv.FormatInt(total, 10) + " bytes of input files, past the bound of " + strconv.FormatInt(e.maxInFileBytes, 10)}
	}
	out := cloneFiles(files)
	slices.SortFunc(out, func(a, b spi.File) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(out); i++ {
		if out[i].Name == out[i-1].Name {
			return nil, invalid(ErrInvalidCall, "effect: two input files have the same name")
		}
	}
	return out, nil
}

// outputFiles checks the output files of a backend's outcome against the
// call's limits and returns a copy the caller owns. The backend is not
// believed: a name spi.CheckFileName refuses, names out of order or given
// twice, or files on an outcome other than OK (the output files of a run
// that did not finish are dropped by the backend) make the outcome
// malformed, an untyped error, and so do files from a backend that does
// not declare Files; more files or more bytes than
// Limits.MaxOutFiles or MaxOutFileBytes is limitExceeded (LimitFiles),
// decided here whatever the backend reported.
func (e *Effect) outputFiles(out spi.Outcome, limits spi.Limits) ([]spi.File, error) {
	files := out.Files
	if len(files) == 0 {
		return nil, nil
	}
	if !e.caps.Files {
		return nil, errors.New("effect: backend returned output files, but it does not declare Files")
	}
	if out.Kind != spi.KindOK {
		return nil, errors.New("effect: backend returned output files with an outcome other than OK")
	}
	if len(files) > limits.MaxOutFiles {
		return nil, &Failure{Code: record.CodeLimitExceeded, Kind: record.LimitFiles,
			Reason: strconv.Itoa(len(files)) + " output files, past the bound of " + strconv.Itoa(limits.MaxOutFiles)}
	}
	var total int64
	for i, f := range files {
		if spi.CheckFileName(f.Name) != nil {
			return nil, errors.New("effect: backend returned an output file whose name spi.CheckFileName refuses")
		}
		if i > 0 && f.Name <= files[i-1].Name {
			return nil, errors.New("effect: backend returned output files out of name order, or a name twice")
		}
		total += int64(len(f.Data))
	}
	if total > limits.MaxOutFileBytes {
		return nil, &Failure{Code: record.CodeLimitExceeded, Kind: record.LimitFiles,
			Reason: strconv.FormatInt(total, 10) + " bytes of output files, past the bound of " + strconv.FormatInt(limits.MaxOutFileBytes, 10)}
	}
	own := cloneFiles(files)
	return own, nil
}

// refsOf returns the receipt's references to files, in their order:
// each name, content address and size. Nil for no files.
func refsOf(files []spi.File) []record.FileRef {
	if len(files) == 0 {
		return nil
	}
	refs := make([]record.FileRef, len(files))
	for i, f := range files {
		refs[i] = record.FileRef{Name: f.Name, Digest: record.AddressOf(f.Data), Bytes: int64(len(f.Data))}
	}
	return refs
}

// cloneFiles returns a copy of files that shares no bytes with them; an
// empty file's data is empty, never nil.
func cloneFiles(files []spi.File) []spi.File {
	out := make([]spi.File, len(files))
	for i, f := range files {
		out[i] = spi.File{Name: f.Name, Data: bytes.Clone(f.Data)}
		if out[i].Data == nil {
			out[i].Data = []byte{}
		}
	}
	return out
}
