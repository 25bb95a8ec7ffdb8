package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// run --shape with a draft-07 format "regex": a 4 MiB value (within the
// output bound) is limitExceeded (output), refused before the validator
// compiles it as a regular expression (seconds and gigabytes, issue 41).
func TestRunShapeWeighsARegexFormat(t *testing.T) {
	a, _ := fakeApp(t)
	shape := script(t, "shape.json", `{"$schema":"http://json-schema.org/draft-07/schema#","format":"regex"}`)
	p := script(t, "v.js", `value "`+strings.Repeat("(a)", 4<<20/3-1)+`"`)
	res := cli(a, "", "run", "--json", "--engine", "fake", "--shape", shape, p)
	require.Equal(t, exitFailure, res.code, res.stderr)
	assert.Contains(t, res.stdout, `"code":"limitExceeded","kind":"output"`)
	assert.Contains(t, res.stdout, "work limit")
}
