package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cliReference is docs/cli.md, relative to this package.
var cliReference = filepath.Join("..", "..", "docs", "cli.md")

var updateCLIReference = flag.Bool("update-cli-reference", false, "write docs/cli.md from the commands (go generate ./cmd/sandbank)")

// TestCLIReferenceIsCurrent: docs/cli.md is what cobra's own documentation
// generator (github.com/spf13/cobra/doc) writes from the commands, so the
// reference cannot drift from the flags and help the binary has. With
// -update-cli-reference (what go generate runs) it writes the file instead.
func TestCLIReferenceIsCurrent(t *testing.T) {
	a, _ := fakeApp(t)
	got := generateCLIReference(t, a.rootCommand())
	if *updateCLIReference {
		require.NoError(t, os.WriteFile(cliReference, got, 0o644))
		return
	}
	want, err := os.ReadFile(cliReference)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got),
		"docs/cli.md is not current: run go generate ./cmd/sandbank")
}

// generateCLIReference writes the reference of root and of every command
// under it, as cobra's GenMarkdown does for one command, into one page: a
// link to another command's page becomes a link to its section.
func generateCLIReference(t *testing.T, root *cobra.Command) []byte {
	t.Helper()
	root.DisableAutoGenTag = true // no date: the page changes only with the commands
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var b bytes.Buffer
	b.WriteString("# The sandbank command line\n\n" +
		"<!-- Generated from the commands by cobra's doc generator: go generate ./cmd/sandbank. Do not edit. -->\n\n")
	toAnchor := func(page string) string {
		return "#" + strings.ReplaceAll(strings.TrimSuffix(page, ".md"), "_", "-")
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c != root {
			return
		}
		var one bytes.Buffer
		require.NoError(t, doc.GenMarkdownCustom(c, &one, toAnchor))
		b.Write(one.Bytes())
		b.WriteString("\n")
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return append(bytes.TrimRight(b.Bytes(), "\n"), '\n')
}
