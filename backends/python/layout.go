//go:build linux

package python

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// probeTimeout bounds the probe of the interpreter on the host.
const probeTimeout = 30 * time.Second

// packagesProbeTimeout bounds the probe when it imports Options.Packages
// (pandas and matplotlib take seconds on a loaded machine, and
// matplotlib builds its font cache).
const packagesProbeTimeout = 3 * time.Minute

// probeResult is what the runner reports in probe mode (runner.py,
// _probe).
type probeResult struct {
	Version    []int    `json:"version"`
	Executable string   `json:"executable"`
	Stdlib     string   `json:"stdlib"`
	PlatStdlib string   `json:"platstdlib"`
	Base       int64    `json:"base"`
	Files      []string `json:"files"`
	// Packages is what the probe found of Options.Packages (packages.go).
	Packages *packagesFound `json:"packages,omitempty"`
	// Error says why the packages could not be imported.
	Error string `json:"error,omitempty"`
}

// layout is the sandbox's file system, as bubblewrap arguments, and what
// the runner needs to know of it.
type layout struct {
	python  string   // the interpreter's real path, as the sandbox sees it
	version string   // "3.11.2"
	base    int64    // the runner's address space before the script's memory
	path    []string // sys.path inside the sandbox
	args    []string // --ro-bind and --symlink arguments
	// packages is the packages' spec for runner.py's _load_packages
	// (JSON text), "" without packages (packages.go).
	packages string
}

// probeInterpreter runs the interpreter at path on the host, outside any
// sandbox, with the runner in probe mode: it reports the interpreter's
// real executable, its standard library and every file it maps once the
// standard library's extension modules are loaded. The interpreter is
// the operator's, and the code it runs is the runner: no script runs
// here.
func probeInterpreter(ctx context.Context, path string, packages *packageSpec) (probeResult, error) {
	timeout := probeTimeout
	if packages != nil {
		timeout = packagesProbeTimeout // the packages are imported too
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	arg, _ := json.Marshal(map[string]any{"probe": true, "seed": 0, "maxLine": 16384, "packages": packages})
	cmd := exec.CommandContext(ctx, path, "-S", "-s", "-B", "-c", runnerSource, string(arg))
	cmd.Env = []string{}
	var out, stderr bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return probeResult{}, fmt.Errorf("python: probing the interpreter %s: %w", path, ctx.Err())
		}
		return probeResult{}, fmt.Errorf("python: the interpreter %s did not start (%v): %s", path, err, firstLine(stderr.Bytes()))
	}
	var p probeResult
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &p); err != nil || len(p.Version) < 2 || p.Executable == "" {
		return probeResult{}, fmt.Errorf("python: the interpreter %s did not answer the probe: %s", path, firstLine(out.Bytes()))
	}
	if p.Version[0] != 3 || p.Version[1] < 10 {
		return probeResult{}, fmt.Errorf("python: the interpreter %s is Python %d.%d; the backend needs 3.10 or later", path, p.Version[0], p.Version[1])
	}
	if packages != nil {
		if p.Packages == nil {
			return probeResult{}, fmt.Errorf("python: the packages %s cannot be used from the site directories of %s: %s", strings.Join(packages.Import, " "), path, firstLine([]byte(p.Error)))
		}
		p.Packages.ConfigDir = packages.Env["MPLCONFIGDIR"]
	}
	return p, nil
}

// newLayout binds, read-only, the interpreter, its standard library, the
// shared libraries and data files it maps, the symbolic links through
// which the dynamic loader finds them, and the allow-listed directory of
// packages when there is one. Nothing else of the host is visible.
func newLayout(p probeResult, sitePackages string, packages []string) (*layout, error) {
	l := &layout{python: p.Executable, base: p.Base}
	l.version = fmt.Sprintf("%d.%d", p.Version[0], p.Version[1])
	if len(p.Version) > 2 {
		l.version += fmt.Sprintf(".%d", p.Version[2])
	}
	b := &binder{bound: map[string]bool{}, linked: map[string]bool{}}
	if err := b.bindTree(p.Stdlib); err != nil {
		return nil, err
	}
	if p.PlatStdlib != p.Stdlib {
		if err := b.bindTree(p.PlatStdlib); err != nil {
			return nil, err
		}
	}
	dynload := filepath.Join(p.PlatStdlib, "lib-dynload")
	l.path = []string{p.Stdlib, dynload}
	if sitePackages != "" {
		if err := b.bindTree(sitePackages); err != nil {
			return nil, err
		}
		l.path = append(l.path, sitePackages)
	}
	if err := l.bindPackages(b, packages, p.Packages); err != nil { // packages.go
		return nil, err
	}
	if err := b.bindFile(p.Executable); err != nil {
		return nil, err
	}
	if interp, err := elfInterpreter(p.Executable); err != nil {
		return nil, err
	} else if interp != "" {
		if err := b.bindFile(interp); err != nil {
			return nil, err
		}
	}
	dirs := map[string]bool{}
	for _, f := range p.Files {
		if under(f, p.Stdlib) || under(f, p.PlatStdlib) || (sitePackages != "" && under(f, sitePackages)) {
			continue
		}
		if err := b.bindFile(f); err != nil {
			return nil, err
		}
		dirs[filepath.Dir(f)] = true
	}
	// The dynamic loader opens a library by its soname (libz.so.1), a
	// symbolic link next to the file it maps (libz.so.1.2.13).
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		entries, err := os.ReadDir(d)
		if err != nil {
			return nil, fmt.Errorf("python: reading the library directory %s: %w", d, err)
		}
		realDir, err := filepath.EvalSymlinks(d)
		if err != nil {
			return nil, fmt.Errorf("python: reading the library directory %s: %w", d, err)
		}
		links := newLinkResolver(d, realDir, entries)
		for _, e := range entries {
			if e.Type()&os.ModeSymlink == 0 {
				continue
			}
			link := filepath.Join(d, e.Name())
			real, err := links.resolve(e.Name())
			if err == nil && b.bound[real] {
				if err := b.bindFile(link); err != nil {
					return nil, err
				}
			}
		}
	}
	l.args = b.args
	return l, nil
}

// linkResolver resolves the links of one directory, whose real path is
// realDir and whose entries it has read: most name an entry next to them
// (libz.so.1 -> libz.so.1.2.13, libz.so -> libz.so.1), which is followed
// through the entries' types, one readlink per link, instead of
// filepath.EvalSymlinks's lstat of every component of the path (a
// library directory holds hundreds of links).
type linkResolver struct {
	dir, realDir string
	links        map[string]bool   // entry name -> is a symbolic link
	memo         map[string]string // link name -> real path ("" unknown)
}

func newLinkResolver(dir, realDir string, entries []os.DirEntry) *linkResolver {
	r := &linkResolver{dir: dir, realDir: realDir, links: map[string]bool{}, memo: map[string]string{}}
	for _, e := range entries {
		r.links[e.Name()] = e.Type()&os.ModeSymlink != 0
	}
	return r
}

// resolve is filepath.EvalSymlinks of the link name in the directory.
func (r *linkResolver) resolve(name string) (string, error) {
	cur := name
	for range 40 {
		if real, ok := r.memo[cur]; ok {
			r.memo[name] = real
			return real, nil
		}
		target, err := os.Readlink(filepath.Join(r.dir, cur))
		if err != nil {
			return "", err
		}
		link, ok := r.links[target]
		if !ok || strings.Contains(target, "/") || target == "." || target == ".." {
			break // elsewhere, or gone: the general way
		}
		if !link {
			real := filepath.Join(r.realDir, target)
			r.memo[name] = real
			return real, nil
		}
		cur = target
	}
	return filepath.EvalSymlinks(filepath.Join(r.dir, name))
}

// binder collects bubblewrap's arguments so that each host path appears
// in the sandbox at the same path: every symbolic link on the way is
// recreated, and the file it leads to bound read-only.
type binder struct {
	args   []string
	bound  map[string]bool // real paths bound
	linked map[string]bool // links recreated
	dirs   []string        // the directories bound, each once
}

// bindTree binds the directory dir (its real path, reached through the
// links on the way).
func (b *binder) bindTree(dir string) error {
	real, err := b.walk(dir)
	if err != nil {
		return err
	}
	st, err := os.Stat(real)
	if err != nil || !st.IsDir() {
		return fmt.Errorf("python: %s is not a directory", dir)
	}
	if !b.bound[real] {
		b.bound[real] = true
		b.args = append(b.args, "--ro-bind", real, real)
		b.dirs = append(b.dirs, real)
	}
	return nil
}

// bindFile binds the file at p, reached through the links on the way.
func (b *binder) bindFile(p string) error {
	real, err := b.walk(p)
	if err != nil {
		return err
	}
	if !b.bound[real] && !b.coveredByTree(real) {
		b.bound[real] = true
		b.args = append(b.args, "--ro-bind", real, real)
		if st, err := os.Stat(real); err == nil && st.IsDir() {
			b.dirs = append(b.dirs, real)
		}
	}
	b.bound[real] = true
	return nil
}

// coveredByTree reports whether a directory already bound holds p.
func (b *binder) coveredByTree(p string) bool {
	for _, d := range b.dirs {
		if d != p && under(p, d) {
			return true
		}
	}
	return false
}

// walk resolves p one component at a time, recreating each symbolic link
// it meets, and returns the real path.
func (b *binder) walk(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("python: %s is not an absolute path", p)
	}
	cur := "/"
	rest := strings.Split(strings.TrimPrefix(filepath.Clean(p), "/"), "/")
	for hops := 0; len(rest) > 0; {
		next := filepath.Join(cur, rest[0])
		rest = rest[1:]
		st, err := os.Lstat(next)
		if err != nil {
			return "", fmt.Errorf("python: %s: %w", p, err)
		}
		if st.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return "", fmt.Errorf("python: %s: too many symbolic links", p)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("python: %s: %w", p, err)
		}
		if !b.linked[next] {
			b.linked[next] = true
			b.args = append(b.args, "--symlink", target, next)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(cur, target)
		}
		rest = append(strings.Split(strings.TrimPrefix(filepath.Clean(target), "/"), "/"), rest...)
		cur = "/"
	}
	return cur, nil
}

// elfInterpreter returns the program interpreter (the dynamic loader)
// the executable names, or "" for a static executable.
func elfInterpreter(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("python: reading the interpreter %s: %w", path, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, prog.Filesz)
		if _, err := prog.ReadAt(b, 0); err != nil {
			return "", fmt.Errorf("python: reading the interpreter %s: %w", path, err)
		}
		return string(bytes.TrimRight(b, "\x00")), nil
	}
	return "", nil
}

func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// firstLine returns b's first line, cut at 200 bytes, for an error
// message about the host's own programs (never a script's text).
func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte("\n"))
	if len(line) > 200 {
		line = line[:200]
	}
	if len(line) == 0 {
		return "(no output)"
	}
	return strings.ToValidUTF8(string(line), "?")
}
