package jsfront

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dop251/goja/ast"
	"github.com/stretchr/testify/require"
)

// seeds are the repository's JavaScript fixtures and workloads (none of
// which uses top-level await) and a few that do.
func seeds(t testing.TB) [][]byte {
	var out [][]byte
	for _, pattern := range []string{"../../fixtures/javascript/*.js", "../../bench/workloads/*.js", "../../backends/*/testdata/*.js"} {
		files, err := filepath.Glob(pattern)
		require.NoError(t, err)
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			out = append(out, b)
		}
	}
	for _, s := range []string{
		"await Promise.resolve(5)",
		"const x = await f(); if (x) { x } else { try { y } catch (e) { z } }",
		"for await (const x of y) {} x",
		"var await = 1; await",
		"async function f() { await 1 } f()",
		"await 1; (a, (b)) // c",
	} {
		out = append(out, []byte(s))
	}
	return out
}

// topLevelAwait names the repository scripts that use top-level await on
// purpose: the kit's async_value and throw_named fixtures and the host-call
// fixtures.
var topLevelAwait = map[string]bool{"async_value.js": true, "host_calls.js": true, "host_clock.js": true, "host_concurrent.js": true, "host_error.js": true, "host_loop.js": true, "throw_named.js": true, "durable_replay.js": true}

// TestFixturesUnchanged is the differential half that matters most: every
// script the kit and the benchmarks run is returned as it is.
func TestFixturesUnchanged(t *testing.T) {
	n := 0
	for _, pattern := range []string{"../../fixtures/javascript/*.js", "../../bench/workloads/*.js", "../../backends/*/testdata/*.js"} {
		files, err := filepath.Glob(pattern)
		require.NoError(t, err)
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			out, wrapped := Prepare(b)
			if topLevelAwait[filepath.Base(f)] {
				require.True(t, wrapped, "%s uses top-level await by design", f)
				n++
				continue
			}
			require.False(t, wrapped, f)
			require.Equal(t, b, out, f)
			n++
		}
	}
	require.Greater(t, n, 10, "the fixtures were found")
}

// FuzzPrepare checks, for any source: Prepare does not panic; an unwrapped
// script is the very slice it was given; a wrapped one is the script with
// only the prefix, the completion assignments and the suffix added, and
// no line before the script's; and a script that parses as a classic
// script without any identifier named await is never wrapped.
func FuzzPrepare(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		out, wrapped := Prepare(src)
		if !wrapped {
			if len(src) > 0 && &out[0] != &src[0] || len(out) != len(src) {
				t.Fatalf("unwrapped but not the same slice")
			}
			return
		}
		if !bytes.Contains(src, []byte("await")) {
			t.Fatalf("wrapped a script without await: %q", src)
		}
		s := string(out)
		if !strings.HasPrefix(s, Prefix) {
			t.Fatalf("no prefix: %q", s)
		}
		s = s[len(Prefix):]
		switch {
		case strings.HasSuffix(s, valueSuffix):
			s = strings.ReplaceAll(s[:len(s)-len(valueSuffix)], assign, "")
		case strings.HasSuffix(s, plainSuffix):
			s = s[:len(s)-len(plainSuffix)]
		default:
			t.Fatalf("no suffix: %q", out)
		}
		if s != string(src) {
			t.Fatalf("the script's bytes changed:\n%q\n%q", src, s)
		}
		if prog, err := parse(string(src)); err == nil && !namesAwait(prog) {
			t.Fatalf("a classic script without await as a name was wrapped: %q", src)
		}
	})
}

// namesAwait reports whether any identifier in the tree is named await,
// walking every node (functions included).
func namesAwait(prog *ast.Program) bool {
	found := false
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		if found {
			return
		}
		switch v.Kind() {
		case reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Pointer:
			if v.IsNil() || v.Type().Elem().PkgPath() != astPkg || v.Type().Elem().Kind() != reflect.Struct {
				return
			}
			if id, ok := v.Interface().(*ast.Identifier); ok && id.Name == "await" {
				found = true
				return
			}
			walk(v.Elem())
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				if v.Type().Field(i).Name != "DeclarationList" {
					walk(v.Field(i))
				}
			}
		case reflect.Slice:
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i))
			}
		}
	}
	walk(reflect.ValueOf(prog.Body))
	return found
}
