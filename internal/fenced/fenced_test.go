package fenced

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBlocks(t *testing.T) {
	md := "text\n```sh\na\nb\n```\n```go\nx\n```\n```sh\nc\n```\n"
	assert.Equal(t, []string{"a\nb", "c"}, Blocks(md, "sh"))
	assert.Equal(t, []string{"x"}, Blocks(md, "go"))
	assert.Empty(t, Blocks(md, "py"))
}
