package rewrite

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzDecode: whatever the bytes, Decode and Rewrite return a module or an
// error wrapping ErrMalformed or ErrUnsupported, never a panic; a module
// that decodes encodes to bytes that decode again to the same encoding
// (the encoder's output is a fixed point), and its rewrite decodes too.
func FuzzDecode(f *testing.F) {
	for _, p := range []string{"testdata/guest.wasm", "../../../fixtures/wasm/echo.wasm", "../../../fixtures/wasm/host_calls.wasm"} {
		if b, err := os.ReadFile(filepath.FromSlash(p)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, wasm []byte) {
		imports, types, importsErr := Imports(wasm)
		if importsErr != nil && !errors.Is(importsErr, ErrMalformed) && !errors.Is(importsErr, ErrUnsupported) {
			t.Fatalf("Imports: an error of no known kind: %v", importsErr)
		}
		m, err := Decode(wasm)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("Decode: an error of no known kind: %v", err)
			}
			return
		}
		if importsErr != nil {
			t.Fatalf("Decode accepts a module whose imports Imports refuses: %v", importsErr)
		}
		if !reflect.DeepEqual(imports, m.Imports) || !reflect.DeepEqual(types, m.Types) {
			t.Fatalf("Imports and Decode disagree on the imports")
		}
		once := m.Encode()
		m2, err := Decode(once)
		if err != nil {
			t.Fatalf("the encoding of a decoded module does not decode: %v", err)
		}
		if twice := m2.Encode(); !bytes.Equal(once, twice) {
			t.Fatalf("encode is not a fixed point (%d bytes, then %d)", len(once), len(twice))
		}
		out, err := Rewrite(wasm)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("Rewrite: an error of no known kind: %v", err)
			}
			return
		}
		if _, err := Decode(out); err != nil {
			t.Fatalf("a rewritten module does not decode: %v", err)
		}
	})
}
