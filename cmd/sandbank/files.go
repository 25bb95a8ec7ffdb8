package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/atomicfile"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

// fileOptions are run's flags about files (docs/design.md, "Files"):
// the input files the script reads (--file) and the directory its output
// files are written into (--out).
type fileOptions struct {
	files []string // --file PATH or NAME=PATH, in order
	out   string   // --out DIR

	listed []outputFile // the run's output files, for --json
}

// outputFile is one output file as run --json lists it: the receipt's
// reference (name, digest, bytes) and, with --out, where it was written.
type outputFile struct {
	record.FileRef
	Path string `json:"path,omitempty"`
}

func (f *fileOptions) addFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringArrayVar(&f.files, "file", nil, "give the script the input file `PATH`, named by its base name, or NAME=PATH to name it (repeatable)")
	fl.StringVar(&f.out, "out", "", "write the script's output files into `DIR`, which must be empty or absent (never overwrites)")
}

// read reads the --file flags into the call's input files. A name that
// spi.CheckFileName refuses, a file that cannot be read, and files over
// maxFileBytes in all are usage errors; the rest (duplicate names, the
// count and bytes the engine accepts) is the effect's to check.
func (f *fileOptions) read() ([]spi.File, error) {
	var out []spi.File
	var total int64
	for _, arg := range f.files {
		name, path, named := strings.Cut(arg, "=")
		if !named {
			path = arg
			name = filepath.Base(path)
		}
		if err := spi.CheckFileName(name); err != nil {
			return nil, usagef("--file %s: %s; name it with --file NAME=PATH, NAME being 1 to %d letters, digits, '.', '_' or '-', beginning with a letter or a digit",
				effect.Excerpt(arg), reason(err), spi.MaxFileNameBytes)
		}
		if path == "" {
			return nil, usagef("--file %s: no path after the name", effect.Excerpt(arg))
		}
		b, err := readInputFile(path, maxFileBytes-total)
		if err != nil {
			return nil, usagef("--file %s: %s", effect.Excerpt(arg), reason(err))
		}
		total += int64(len(b))
		out = append(out, spi.File{Name: name, Data: b})
	}
	return out, nil
}

// readInputFile reads the regular file at path, at most limit bytes: the
// command line holds every input file in memory before the effect
// bounds them, so what it reads is bounded in all by maxFileBytes.
func readInputFile(path string, limit int64) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	if st, err := fh.Stat(); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("the input files are larger than %d bytes in all", maxFileBytes)
	}
	return b, nil
}

// prepareOut makes --out's directory ready before the run, so that a
// directory that cannot be used costs no engine: it is created when
// absent, and one that holds anything is refused. Output files are named
// by the script, which is untrusted: written into an empty directory,
// none of them replaces a file of the caller's.
func (f *fileOptions) prepareOut() error {
	if f.out == "" {
		return nil
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return usagef("--out %s: %s", effect.Excerpt(f.out), reason(err))
	}
	d, err := os.Open(f.out)
	if err != nil {
		return usagef("--out %s: %s", effect.Excerpt(f.out), reason(err))
	}
	defer d.Close()
	names, err := d.Readdirnames(1)
	switch {
	case err != nil && !errors.Is(err, io.EOF):
		return usagef("--out %s: %s", effect.Excerpt(f.out), reason(err))
	case len(names) > 0:
		return usagef("--out %s: the directory is not empty; pass a new or empty directory (output files never replace a file)", effect.Excerpt(f.out))
	}
	return nil
}

// writeOut writes rec's output files into --out's directory, each whole
// or not at all (internal/atomicfile), and notes them for --json. Each
// name is checked again with spi.CheckFileName before it is joined to the
// directory, so that nothing is written outside it whatever the record
// holds; a file already there is never replaced. When a file cannot be
// written, the ones written before it are removed and the error is
// infrastructure (exit 1). Without --out, the files are only listed.
func (f *fileOptions) writeOut(rec *effect.Record) error {
	if rec == nil {
		return nil
	}
	refs := make(map[string]record.FileRef, len(rec.Receipt.OutputFiles))
	for _, r := range rec.Receipt.OutputFiles {
		refs[r.Name] = r
	}
	var written []string
	fail := func(err error) error {
		for _, p := range written {
			_ = os.Remove(p)
		}
		f.listed = nil
		return untyped(fmt.Errorf("--out %s: %w", effect.Excerpt(f.out), err))
	}
	for _, file := range rec.Files {
		if err := spi.CheckFileName(file.Name); err != nil {
			return fail(err)
		}
		ref, ok := refs[file.Name]
		if !ok {
			return fail(fmt.Errorf("the output file %s is not in the run's receipt", file.Name))
		}
		of := outputFile{FileRef: ref}
		if f.out != "" {
			of.Path = filepath.Join(f.out, file.Name)
			if err := atomicfile.CreateFile(of.Path, 0o644, file.Data); err != nil {
				if errors.Is(err, fs.ErrExist) {
					err = fmt.Errorf("%s appeared during the run; it is left as it is", file.Name)
				}
				return fail(err)
			}
			written = append(written, of.Path)
		}
		f.listed = append(f.listed, of)
	}
	return nil
}

// withFiles adds the output files to run --json's object as
// "files":[{"name":…,"digest":…,"bytes":…,"path":…}], when the run wrote
// any.
func (f *fileOptions) withFiles(out []byte) []byte {
	if len(f.listed) == 0 || len(out) < 2 || out[len(out)-1] != '}' {
		return out
	}
	b, err := json.Marshal(f.listed)
	if err != nil {
		return out
	}
	out = append(out[:len(out)-1:len(out)-1], `,"files":`...)
	out = append(out, b...)
	return append(out, '}')
}

// writeOutputs writes the output files of a run that returned a value
// (the effect drops those of any other run) and, without --out, says on
// stderr that they were not written.
func (a *app) writeOutputs(o *runOptions) error {
	if err := o.files.writeOut(o.rec.rec); err != nil {
		return err
	}
	if n := len(o.files.listed); n > 0 && o.files.out == "" && !o.rec.quiet {
		fmt.Fprintf(a.stderr, "sandbank: the script wrote %d output files; pass --out DIR to keep them\n", n)
	}
	return nil
}
