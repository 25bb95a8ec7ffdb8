package jsguest

import (
	"testing"

	quickjswasi "github.com/paralin/go-quickjs-wasi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
)

func TestParseLayoutOfTheShippedBinary(t *testing.T) {
	l, err := ParseLayout(quickjswasi.QuickJSWASM)
	require.NoError(t, err)
	t.Logf("stack [%d, %d): %d bytes", l.Bottom, l.Top, l.StackBytes())
	assert.Equal(t, uint32(0), l.Bottom%16)
	assert.Greater(t, l.Top, l.Bottom)
}

func TestParseLayoutRefusesWhatItCannotDerive(t *testing.T) {
	for name, wasm := range map[string][]byte{
		"empty":       nil,
		"not wasm":    []byte("hello world!"),
		"truncated":   quickjswasi.QuickJSWASM[:len(quickjswasi.QuickJSWASM)/2],
		"no sections": []byte("\x00asm\x01\x00\x00\x00"),
		"no DWARF":    stripCustom(t, quickjswasi.QuickJSWASM, ".debug_info"),
		"no names":    stripCustom(t, quickjswasi.QuickJSWASM, "name"),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseLayout(wasm)
			assert.ErrorContains(t, err, "quickjs: stack layout:")
		})
	}
}

// stripCustom returns wasm without the custom section called name.
func stripCustom(t *testing.T, wasm []byte, name string) []byte {
	t.Helper()
	m, err := wasmrewrite.Decode(wasm)
	require.NoError(t, err)
	require.NotNil(t, m.Custom(name), "no custom section %q", name)
	m.DropCustom(name)
	return m.Encode()
}

func TestCanary(t *testing.T) {
	a, err := NewCanary()
	require.NoError(t, err)
	b, err := NewCanary()
	require.NoError(t, err)
	assert.NotEqual(t, a, b)
	mem := append([]byte(nil), a[:]...)
	assert.True(t, a.Intact(mem))
	mem[CanarySize-1] ^= 1
	assert.False(t, a.Intact(mem))
	assert.False(t, a.Intact(mem[:10]))
}
