package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckJSONGivesThePosition(t *testing.T) {
	tests := map[string]string{
		`{"a": nope}`:            "line 1, column 8",
		"{\n  \"a\": 1,\n  }":    "line 3, column 3",
		"[1,\n 2,\n \"é\" x]":    "line 3, column 6",
		`{"a": 1`:                "line 1, column 8",
		``:                       "line 1, column 1",
		`1 2`:                    "line 1, column 3",
		"{\"a\":\n\t[1, 2,, 3]}": "line 2, column 8",
	}
	for in, want := range tests {
		err := checkJSON([]byte(in))
		if assert.Error(t, err, "%q", in) {
			assert.Contains(t, err.Error(), want, "%q", in)
		}
	}
	assert.NoError(t, checkJSON([]byte(` {"a": [1, "é"]} `)))
}

func TestRunInputErrorsAndStdin(t *testing.T) {
	a, rec := fakeApp(t)
	js := script(t, "s.js", "echo")

	res := cli(a, "", "run", "--input", "{\"a\":\n  tru}", js)
	assert.Equal(t, exitUsage, res.code)
	assertOneLine(t, res.stderr)
	assert.Contains(t, res.stderr, "--input: invalid JSON at line 2, column 6")

	// An empty --input is invalid JSON too, not the absent flag (null).
	res = cli(a, "", "run", "--input", "", js)
	assert.Equal(t, exitUsage, res.code)
	assertOneLine(t, res.stderr)
	assert.Contains(t, res.stderr, "--input: invalid JSON at line 1, column 1")

	// verify reads its --input the same way.
	res = cli(a, "", "verify", "--record", script(t, "r.json", "{}"), "--input", "", js)
	assert.Equal(t, exitUsage, res.code)
	assert.Contains(t, res.stderr, "--input: invalid JSON at line 1, column 1")

	file := script(t, "in.json", "[1,\n2,\n]")
	res = cli(a, "", "run", "--input-file", file, js)
	assert.Equal(t, exitUsage, res.code)
	assert.Contains(t, res.stderr, "line 3, column 1")

	res = cli(a, `{"from": "stdin"}`, "run", "--input-file", "-", js)
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Equal(t, `{"from":"stdin"}`+"\n", res.stdout)
	assert.JSONEq(t, `{"from":"stdin"}`, string(rec.last.LastRequest().Input))

	res = cli(a, `{"from": `, "run", "--input-file", "-", js)
	assert.Equal(t, exitUsage, res.code)
	assert.Contains(t, res.stderr, "--input-file -: invalid JSON at line 1, column 10")

	res = cli(a, "echo", "run", "--lang", "javascript", "--input-file", "-", "-")
	assert.Equal(t, exitUsage, res.code)
	assert.Contains(t, res.stderr, "cannot both be standard input")
}
