package run

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFirstLine(t *testing.T) {
	assert.Equal(t, "wasm error: unreachable", FirstLine("wasm error: unreachable\nwasm stack trace:\n\tf()"))
	assert.Equal(t, "no newline", FirstLine("no newline"))
	assert.Equal(t, strings.Repeat("x", 200), FirstLine(strings.Repeat("x", 300)))
}
