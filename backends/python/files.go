//go:build linux

package python

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/sandbank/sandbank/spi"
)

// This file is the host's side of a run's files (runner.py's _files_in
// and _files_out have the runner's). The input files cross after the
// input, each its length of bytes as the request's header says, and the
// runner writes them, read-only, in the run's working directory (its
// /tmp) before the script starts, then makes out/ there, empty. Once the
// script has its value, every entry of out/ crosses as a frame, before
// the value's: W, a regular file (its name and content), or X, anything
// else (a directory, a symbolic link, which the runner never follows, or
// another kind of file). The script could write these frames itself:
// the host believes them only as the files the script wrote, bounds
// each by what the run may still return before buffering it, and
// decides the outcome: past Limits.MaxOutFiles or MaxOutFileBytes the
// files limit. An entry that is not an output file (a name
// spi.CheckFileName refuses, a directory, a symbolic link, another kind
// of file, or out/ itself replaced) is left out, as a write under a
// hostile name in another language writes nothing, and the run goes on:
// the host adds a warning line to the run's log saying what was left
// out and why (the script's own name is quoted only when valid).

const (
	frameFile  = 'W' // the name's length (a byte), the name, the file's content
	frameEntry = 'X' // the name's length (a byte), the name, what it is: 'd', 'l' or 'o'
)

// filePageBytes is what a tmpfs file or directory holds at least: the
// host's check that the input files fit in the run's /tmp counts each
// rounded up to it, and one more for out/.
const filePageBytes = 4096

// filesCannotFit is the host's own check of the input files against the
// run's /tmp (scratch bytes, negative or zero for none), before anything
// starts. Files that pass may still not fit (the directory's own pages,
// or the memory limit, which a cgroup charges the files to): the runner
// then says so before the script starts, as for an input that does not
// fit.
func filesCannotFit(files []spi.File, scratch int64) bool {
	if len(files) == 0 {
		return false
	}
	need := int64(filePageBytes) // out/
	for _, f := range files {
		need += (int64(len(f.Data)) + filePageBytes - 1) / filePageBytes * filePageBytes
		need += filePageBytes // the entry
	}
	return need > scratch
}

// outDirName is the output directory's name in the working directory.
const outDirName = "out"

// outDirClash reports an input file named as the output directory, which
// cannot be both: the run is the scriptError FileExistsError (Python's
// own name for it), decided before anything starts.
func outDirClash(files []spi.File) (spi.Outcome, bool) {
	for _, f := range files {
		if f.Name == outDirName {
			return spi.Threw("FileExistsError", "python: an input file is named out, the output directory's name in the working directory"), true
		}
	}
	return spi.Outcome{}, false
}

// filesHeader is the request header's "f": each input file's name and
// length, in the order their bytes follow the input.
func filesHeader(files []spi.File) [][2]any {
	h := make([][2]any, len(files))
	for i, f := range files {
		h[i] = [2]any{f.Name, len(f.Data)}
	}
	return h
}

// outFiles collects a run's output files from its frames, within the
// request's bounds.
type outFiles struct {
	warn     func(string) // a warning line in the run's log
	maxFiles int
	maxBytes int64
	bytes    int64
	files    []spi.File
}

func newOutFiles(l spi.Limits, warn func(string)) *outFiles {
	return &outFiles{warn: warn, maxFiles: l.MaxOutFiles, maxBytes: l.MaxOutFileBytes}
}

// frameBound is the most a W frame may hold: a name and what the run
// may still return.
func (o *outFiles) frameBound() int64 {
	return 1 + maxNameBytes + max(o.maxBytes-o.bytes, 0)
}

// errFilesPast is a W frame whose length alone takes the run past its
// output bytes.
var errFilesPast = errors.New("python: output files past the bound")

// add takes one W or X frame. It returns the run's ending when the frame
// ends the run (nil if not): the files limit, or a broken frame.
func (o *outFiles) add(kind byte, payload []byte) *ending {
	name, rest, ok := splitNamed(payload)
	if !ok {
		return &ending{kind: endBroken}
	}
	if kind == frameEntry {
		if len(rest) != 1 {
			return &ending{kind: endBroken}
		}
		what := map[byte]string{'d': "a directory", 'l': "a symbolic link"}[rest[0]]
		if what == "" {
			what = "not a regular file"
		}
		switch {
		case name == "":
			o.warn("python: out/ is not a directory: no output files")
		case spi.CheckFileName(name) != nil:
			o.warn(fmt.Sprintf("python: an entry of out/ is %s, not an output file: output files are regular files directly under out/", what))
		default:
			o.warn(fmt.Sprintf("python: out/%s is %s, not an output file: output files are regular files directly under out/", name, what))
		}
		return nil
	}
	if err := spi.CheckFileName(name); err != nil {
		o.warn("python: a file under out/ is not an output file: " + err.Error())
		return nil
	}
	if len(o.files) >= o.maxFiles || int64(len(rest)) > o.maxBytes-o.bytes {
		return &ending{kind: endFiles}
	}
	for _, f := range o.files {
		if f.Name == name {
			return &ending{kind: endBroken} // a directory lists a name once
		}
	}
	o.bytes += int64(len(rest))
	o.files = append(o.files, spi.File{Name: name, Data: rest})
	return nil
}

// sorted returns the files in name order.
func (o *outFiles) sorted() []spi.File {
	slices.SortFunc(o.files, func(a, b spi.File) int { return cmp.Compare(a.Name, b.Name) })
	return o.files
}
