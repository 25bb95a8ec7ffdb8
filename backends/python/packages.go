//go:build linux

package python

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// This file is the allow-listed packages (Options.Packages): taken from
// the interpreter's system site directories (Debian's dist-packages),
// found by the probe (runner.py's _probe_packages), which imports them
// on the host as the zygote will and reports what they imported, opened
// and mapped; only that is bound, read-only, in the sandbox. The zygote
// imports them before it prepares its first run (runner.py's
// _load_packages), single-threaded, so that a run pays nothing for them.

// packageModules are the modules imported with a package beyond itself:
// what its first use imports, lazily, at a cost every run would pay
// (about 70 ms of the data_chart job's first run on the host): pyplot
// and the Agg backend, the image plugins PIL loads on a figure's first
// save, pandas' CSV writer. A module the system lacks is skipped.
var packageModules = map[string][]string{
	"matplotlib": {"matplotlib.pyplot", "matplotlib.backends.backend_agg",
		"PIL.BmpImagePlugin", "PIL.GifImagePlugin", "PIL.JpegImagePlugin", "PIL.PngImagePlugin", "PIL.PpmImagePlugin"},
	"pandas": {"pandas.io.formats.csvs"},
}

// packageEnv are the environment variables set before the packages are
// imported: one thread for every numerical library that starts a pool
// at import (the zygote forks, and must hold no thread), and
// matplotlib's Agg backend (no display). MPLCONFIGDIR, the read-only
// configuration directory with the font cache, is added per machine.
var packageEnv = map[string]string{
	"OPENBLAS_NUM_THREADS":   "1",
	"OMP_NUM_THREADS":        "1",
	"MKL_NUM_THREADS":        "1",
	"BLIS_NUM_THREADS":       "1",
	"NUMEXPR_NUM_THREADS":    "1",
	"VECLIB_MAXIMUM_THREADS": "1",
	"MPLBACKEND":             "Agg",
}

// configMount is where the sandbox sees the configuration directory the
// probe made (read-only).
const configMount = "/sandbank/mplconfig"

// sandboxConfigDir is MPLCONFIGDIR in the sandbox: in the zygote's
// /tmp (zygoteTmpBytes), a copy of the configuration directory the
// probe made. Each run mounts its own /tmp over it.
const sandboxConfigDir = "/tmp/sandbank-mplconfig"

// zygoteTmpBytes is the size of the zygote's own /tmp when it loads
// packages (matplotlib's configuration directory: a font cache of 40
// KiB).
const zygoteTmpBytes = 4 << 20

// packageSpec is what the runner's _load_packages reads.
type packageSpec struct {
	// Copy is a directory to copy, read-only source first, before the
	// imports: matplotlib's configuration directory with the font cache,
	// into the zygote's (or the run's) /tmp, since matplotlib refuses a
	// directory it cannot write (and then makes a temporary one, empty).
	Copy   []string          `json:"copy,omitempty"`
	Env    map[string]string `json:"env"`
	Path   []string          `json:"path,omitempty"`
	Import []string          `json:"import"`
}

// packagesFound is what the probe reports of the packages.
type packagesFound struct {
	Path    []string `json:"path"`    // the site directories
	Entries []string `json:"entries"` // their entries imported or opened: packages and dependencies
	Trees   []string `json:"trees"`   // data directories a package names
	Files   []string `json:"files"`   // other files opened while importing
	// ConfigDir is MPLCONFIGDIR, with the font cache the probe left there.
	ConfigDir string `json:"configDir"`
}

// probeSpec is the probe's "packages": the packages to import, with
// MPLCONFIGDIR made for it; nil without packages.
func (b *Backend) probeSpec() (*packageSpec, error) {
	if len(b.packages) == 0 {
		return nil, nil
	}
	dir, err := b.configDir()
	if err != nil {
		return nil, err
	}
	spec := &packageSpec{Env: map[string]string{"MPLCONFIGDIR": dir}}
	for k, v := range packageEnv {
		spec.Env[k] = v
	}
	spec.Import = packageImports(b.packages)
	return spec, nil
}

// packageImports are the modules imported for packages.
func packageImports(packages []string) []string {
	var out []string
	for _, p := range packages {
		out = append(out, p)
		out = append(out, packageModules[p]...)
	}
	return out
}

// configDir makes the directory matplotlib reads its configuration and
// font cache from: in the cache directory, or a new temporary directory
// of this process without one. Only its owner may write it; the sandbox
// binds it read-only.
func (b *Backend) configDir() (string, error) {
	var dir string
	if b.cacheDir != "" {
		dir = filepath.Join(b.cacheDir, "python-mplconfig")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", fmt.Errorf("python: making the packages' configuration directory: %w", err)
		}
	} else {
		d, err := os.MkdirTemp("", "sandbank-mplconfig-")
		if err != nil {
			return "", fmt.Errorf("python: making the packages' configuration directory: %w", err)
		}
		dir = d
	}
	return filepath.EvalSymlinks(dir)
}

// sitePath is the site directories that hold an entry of the packages,
// in their order: the others stay off sys.path, since one of them may be
// visible in the sandbox, bound with the standard library (Debian's
// /usr/lib/python3.X/dist-packages holds a fragment of numpy, which
// would make an unlisted numpy an empty namespace package rather than
// ModuleNotFoundError).
func sitePath(found *packagesFound) []string {
	var out []string
	for _, d := range found.Path {
		if slices.ContainsFunc(found.Entries, func(e string) bool { return under(e, d) }) {
			out = append(out, d)
		}
	}
	return out
}

// bindPackages adds the packages the probe found to the layout: their
// entries, data and files bound read-only, the site directories on
// sys.path, and the spec the zygote (or the runner) loads them with.
func (l *layout) bindPackages(b *binder, packages []string, found *packagesFound) error {
	if len(packages) == 0 {
		return nil
	}
	if found == nil {
		return fmt.Errorf("python: the probe did not report the packages %s", strings.Join(packages, " "))
	}
	for _, e := range found.Entries {
		st, err := os.Stat(e)
		switch {
		case err != nil:
			return fmt.Errorf("python: a package's file: %w", err)
		case st.IsDir():
			err = b.bindTree(e)
		default:
			err = b.bindFile(e)
		}
		if err != nil {
			return err
		}
	}
	for _, t := range found.Trees {
		if err := b.bindTree(t); err != nil {
			return err
		}
	}
	for _, f := range found.Files {
		if err := b.bindFile(f); err != nil {
			return err
		}
	}
	// The configuration directory may be under the host's /tmp, which
	// the sandbox's own /tmp hides: it is bound at configMount.
	real, err := filepath.EvalSymlinks(found.ConfigDir)
	if err != nil {
		return fmt.Errorf("python: the packages' configuration directory: %w", err)
	}
	b.args = append(b.args, "--ro-bind", real, configMount)
	path := sitePath(found)
	l.path = append(l.path, path...)
	s := packageSpec{Path: path, Import: packageImports(packages), Env: map[string]string{"MPLCONFIGDIR": sandboxConfigDir},
		Copy: []string{configMount, sandboxConfigDir}}
	for k, v := range packageEnv {
		s.Env[k] = v
	}
	text, err := json.Marshal(s)
	if err != nil {
		return err
	}
	l.packages = string(text)
	return nil
}
