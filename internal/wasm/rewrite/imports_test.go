package rewrite

import (
	"errors"
	"testing"

	quickjswasi "github.com/paralin/go-quickjs-wasi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Imports reads what Decode reads of a module's imports, and stops there.
func TestImports(t *testing.T) {
	m, err := Decode(quickjswasi.QuickJSWASM)
	require.NoError(t, err)
	imports, types, err := Imports(quickjswasi.QuickJSWASM)
	require.NoError(t, err)
	assert.Equal(t, m.Imports, imports)
	assert.Equal(t, m.Types, types)
	assert.NotEmpty(t, imports)

	// A module cut right after its import section still has its imports:
	// nothing after them is read.
	cut := cutAfterImports(t, quickjswasi.QuickJSWASM)
	again, _, err := Imports(cut)
	require.NoError(t, err)
	assert.Equal(t, imports, again)
	_, err = Decode(cut)
	require.Error(t, err, "the cut module is not whole")

	for _, bad := range [][]byte{nil, []byte("\x00asm"), []byte("\x00asm\x02\x00\x00\x00"), append([]byte("\x00asm\x01\x00\x00\x00\x02\x05"), 1, 2)} {
		_, _, err := Imports(bad)
		require.Error(t, err)
		assert.True(t, errors.Is(err, ErrMalformed) || errors.Is(err, ErrUnsupported), "%v", err)
	}
}

// cutAfterImports returns wasm up to the end of its import section and
// the header of the next section, cut in its middle.
func cutAfterImports(t *testing.T, wasm []byte) []byte {
	t.Helper()
	r := &reader{b: wasm[8:], off: 8}
	for !r.done() {
		id := r.byte()
		size := r.u32()
		r.bytes(size)
		require.NoError(t, r.err)
		if id == secImport {
			return append(wasm[:r.off:r.off], secFunction, 0x80) // a section size cut short
		}
	}
	t.Fatal("no import section")
	return nil
}
