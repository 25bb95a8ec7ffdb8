package rewrite

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	quickjswasi "github.com/paralin/go-quickjs-wasi"
	"github.com/tetratelabs/wazero"
)

// corpus is every wasm module of the repository and the QuickJS binary.
func corpus(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{"go-quickjs-wasi": quickjswasi.QuickJSWASM}
	root := filepath.Join("..", "..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".wasm") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out[path] = b
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 30 {
		t.Fatalf("found %d modules, want the repository's 30 and more", len(out))
	}
	return out
}

// TestRoundTrip decodes and encodes every module of the corpus and
// requires the same bytes back.
func TestRoundTrip(t *testing.T) {
	for name, wasm := range corpus(t) {
		m, err := Decode(wasm)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := m.Encode(); !bytes.Equal(got, wasm) {
			t.Errorf("%s: encode(decode(m)) differs from m (%d bytes against %d)", name, len(got), len(wasm))
		}
	}
}

// TestRewriteValidates rewrites every module of the corpus and has
// wazero validate the result: it validates exactly when the original
// does (fixtures/wasm/syntax_error.wasm is invalid on purpose).
func TestRewriteValidates(t *testing.T) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	for name, wasm := range corpus(t) {
		out, err := Rewrite(wasm)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		_, origErr := rt.CompileModule(ctx, wasm)
		_, err = rt.CompileModule(ctx, out)
		switch {
		case origErr != nil && err == nil:
			t.Errorf("%s: the original does not validate (%v), but the rewritten one does", name, origErr)
		case origErr == nil && err != nil:
			t.Errorf("%s: the rewritten module does not validate: %v", name, err)
		}
	}
}
