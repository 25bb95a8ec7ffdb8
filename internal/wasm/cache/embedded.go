package cache

import (
	"runtime/debug"
	"sync"
	"unsafe"
)

// EmbeddedInput is what Key should take as its input for input, bytes
// this build may embed from module: when input is the embedded slice
// itself (not bytes a test or a caller put in its place) and the build
// can name module, that name; else input, which Key hashes.
//
// A module is named by its version and go.sum hash when this build has
// it as a dependency, or, for this build's own module, by the version
// control revision of a build from an unmodified tree. A build that
// records neither (a replaced module without a sum, a modified tree, a
// build without version control stamps, a test binary) hashes the bytes.
// Naming them spares every process the hashing of a guest module of
// MiBs (milliseconds, and a page fault per 4 KiB of it) before its first
// run.
func EmbeddedInput(input, embedded []byte, module string) []byte {
	return embeddedInput(input, embedded, module, embeddedIDs())
}

// embeddedInput is EmbeddedInput with the names a build records.
func embeddedInput(input, embedded []byte, module string, ids map[string]string) []byte {
	if len(input) != len(embedded) || unsafe.SliceData(input) != unsafe.SliceData(embedded) {
		return input
	}
	if id, ok := ids[module]; ok {
		return []byte(id)
	}
	return input
}

// embeddedIDs names the modules of this build (moduleIDs).
var embeddedIDs = sync.OnceValue(func() map[string]string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return moduleIDs(bi)
})

// moduleIDs maps each module bi can name to its name: the dependencies
// with a sum, and the main module when bi has the revision of an
// unmodified tree.
func moduleIDs(bi *debug.BuildInfo) map[string]string {
	ids := map[string]string{}
	for _, d := range bi.Deps {
		path := d.Path
		if d.Replace != nil {
			d = d.Replace
		}
		if d.Sum != "" {
			ids[path] = "module " + path + "@" + d.Version + " " + d.Sum
		}
	}
	var revision string
	modified := true
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value != "false"
		}
	}
	if revision != "" && !modified && bi.Main.Path != "" {
		ids[bi.Main.Path] = "revision " + bi.Main.Path + " " + revision
	}
	return ids
}
