package rewrite

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAppendU32Width: a size keeps the width the binary gave it (Go's
// linker pads section sizes to five bytes) when it fits, and falls back to
// the shortest form when it does not.
func TestAppendU32Width(t *testing.T) {
	for _, tc := range []struct {
		v     uint32
		width int
		want  []byte
	}{
		{0, 0, []byte{0}},
		{100, 1, []byte{100}},
		{100, 2, []byte{0xe4, 0x00}},
		{100, 5, []byte{0xe4, 0x80, 0x80, 0x80, 0x00}},
		{300, 1, []byte{0xac, 0x02}},
		{1 << 20, 2, []byte{0x80, 0x80, 0x40}},
		{^uint32(0), 5, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}},
	} {
		got := appendU32Width(nil, tc.v, tc.width)
		assert.Equal(t, tc.want, got, "%d in %d bytes", tc.v, tc.width)
		r := &reader{b: got}
		assert.Equal(t, tc.v, r.u32(), "reads back")
	}
}
