package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHelpFitsTheWidth: when stdout is not a terminal, every command's
// help fits 80 columns (run --help was 141 wide: flag descriptions are
// wrapped), its examples aside (a command line is not wrapped).
func TestHelpFitsTheWidth(t *testing.T) {
	for _, c := range [][]string{{"--help"}, {"run", "--help"}, {"verify", "--help"}, {"matrix", "--help"}, {"engines", "--help"},
		{"new", "backend", "--help"}, {"mcp", "--help"}, {"bench", "--help"}, {"version", "--help"}} {
		a, _ := fakeApp(t)
		res := cli(a, "", c...)
		require.Equal(t, exitOK, res.code, "%v: %s", c, res.stderr)
		example := false
		for _, l := range strings.Split(res.stdout, "\n") {
			if l == "Examples:" || l == "" {
				example = l == "Examples:"
			}
			if example {
				continue
			}
			assert.LessOrEqual(t, utf8.RuneCountInString(l), plainWidth, "%v: %q", c, l)
		}
	}
}

// TestWriteFitted splits a wide table into tables that fit, each led by
// the first column.
func TestWriteFitted(t *testing.T) {
	head := []string{"NAME", "AAAAAAAAAAAAAAAAAAAA", "BBBBBBBBBBBBBBBBBBBB", "CCCCCCCCCCCCCCCCCCCC"}
	rows := [][]string{{"x", "1", "2", "3"}, {"yy", "4", "5", "6"}}
	var b strings.Builder
	require.NoError(t, writeFitted(&b, 50, head, rows))
	parts := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n\n")
	require.Len(t, parts, 2, b.String())
	for _, p := range parts {
		lines := strings.Split(p, "\n")
		require.Len(t, lines, 3)
		assert.Equal(t, "NAME", strings.Fields(lines[0])[0])
		assert.Equal(t, "yy", strings.Fields(lines[2])[0])
		for _, l := range lines {
			assert.LessOrEqual(t, utf8.RuneCountInString(l), 50, "%q", l)
		}
	}
}
