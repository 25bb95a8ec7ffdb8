package codemode_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/codemode"
	"github.com/sandbank/sandbank/mcpserver"
)

// A Host is what an MCP server takes as its host functions.
var _ mcpserver.Host = (*codemode.Host)(nil)

// TestTheDoorAndCodeModeAreApart: neither package's own code imports the
// other: mcpserver knows host functions through the interface it owns
// (mcpserver.Host), and code mode is an MCP client, not a door.
func TestTheDoorAndCodeModeAreApart(t *testing.T) {
	for dir, other := range map[string]string{
		".":            "github.com/sandbank/sandbank/mcpserver",
		"../mcpserver": "github.com/sandbank/sandbank/codemode",
	} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		require.NotEmpty(t, files)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			require.NoError(t, err)
			for _, imp := range af.Imports {
				path, err := strconv.Unquote(imp.Path.Value)
				require.NoError(t, err)
				assert.NotEqual(t, other, path, "%s imports %s", f, other)
			}
		}
	}
}
