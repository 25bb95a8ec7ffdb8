package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// maxErrorBytes is the bound the tests hold a command line error to,
// whatever the caller typed: it quotes at most an excerpt of the caller's
// text (effect.Excerpt).
const maxErrorBytes = 1024

// TestErrorsQuoteAnExcerpt: a 1 MiB engine or language name, flag value,
// path or flag comes back as a short usage error that still says what was
// wrong.
func TestErrorsQuoteAnExcerpt(t *testing.T) {
	js := script(t, "s.js", "value 1")
	huge := strings.Repeat("n", 1<<20)
	spaced := strings.Repeat("n ", 1<<19)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown engine", []string{"run", "--engine", huge, js}, `unknown engine "nnnn`},
		{"unknown language", []string{"run", "--lang", huge, js}, `unknown language "nnnn`},
		{"engine and language disagree", []string{"run", "--engine", "fake", "--lang", huge, js}, `runs javascript, not "nnnn`},
		{"bad timeout", []string{"run", "--timeout", huge, js}, "--timeout: invalid duration"},
		{"bad memory", []string{"run", "--memory", huge, js}, "--memory: invalid size"},
		{"missing input file", []string{"run", "--input-file", "/" + huge, js}, "--input-file /nnnn"},
		{"missing shape file", []string{"run", "--shape", "/" + huge, js}, "--shape /nnnn"},
		{"missing script", []string{"run", "/" + huge + ".js"}, "cannot read script /nnnn"},
		{"bad host", []string{"run", "--host", huge, js}, `--host "nnnn`},
		{"unwritable receipt", []string{"run", "--receipt", "/" + huge, js}, "--receipt /nnnn"},
		{"unknown flag", []string{"run", "--" + huge, js}, "unknown flag: --nnnn"},
		{"invalid flag value", []string{"run", "--json=" + huge, js}, `invalid argument "nnnn`},
		{"invalid flag value with spaces", []string{"run", "--json=" + spaced, js}, `invalid argument "n`},
		{"unknown command", []string{huge}, `unknown command "nnnn`},
		{"unknown case", []string{"matrix", "--case", huge}, `unknown case "nnnn`},
		{"missing tenants file", []string{"serve", "--tenants", "/" + huge}, "--tenants: /nnnn"},
		{"bad log format", []string{"serve", "--dev", "--log-format", huge}, `want json or text, not "nnnn`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, rec := fakeApp(t)
			res := cli(a, "", tc.args...)
			assert.Equal(t, exitUsage, res.code, "stderr: %.2000s", res.stderr)
			assert.LessOrEqual(t, len(res.stderr), maxErrorBytes, "%.2000s", res.stderr)
			assert.Contains(t, res.stderr, tc.want)
			assert.Nil(t, rec.last, "no engine runs on a usage error")
		})
	}
}
