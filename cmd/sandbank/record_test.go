package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

// recordMembers are the members run --json adds from the run record.
var recordMembers = []string{"logs", "logsCut", "stats", "receipt", "eventsDropped"}

// withoutRecord returns run --json's object without the record's members,
// for the tests of the object's other members.
func withoutRecord(t *testing.T, stdout string) string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(stdout), &m), stdout)
	for _, k := range recordMembers {
		delete(m, k)
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return string(b)
}

// run --json has the record's logs, stats and receipt, for a value and
// for a typed failure; the receipt names the engine and the script.
func TestRunJSONHasTheRecord(t *testing.T) {
	a, _ := fakeApp(t)
	p := script(t, "v.js", "value {\"a\":1}")
	res := cli(a, "", "run", "--json", "--engine", "fake", "--input", `{"n":1}`, p)
	require.Equal(t, exitOK, res.code, res.stderr)
	var got struct {
		Value   json.RawMessage  `json:"value"`
		Logs    []record.LogLine `json:"logs"`
		Stats   record.Stats     `json:"stats"`
		Receipt record.Receipt   `json:"receipt"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &got), res.stdout)
	assert.NotNil(t, got.Logs)
	assert.Equal(t, "fake", got.Receipt.Engine)
	assert.Equal(t, record.OutcomeOK, got.Receipt.Outcome)
	src, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, record.AddressOf(src), got.Receipt.Script)
	assert.Positive(t, got.Stats.Duration)

	res = cli(a, "", "run", "--json", "--engine", "fake", script(t, "t.js", "throw TypeError boom"))
	require.Equal(t, exitFailure, res.code)
	assert.Contains(t, res.stdout, `"outcome":"scriptError"`)
	assert.Contains(t, res.stdout, `"code":"scriptError"`)
}

// --receipt writes the canonical receipt; verify accepts it and the --json
// object, and refuses either with another input or a changed value.
func TestReceiptAndVerify(t *testing.T) {
	a, _ := fakeApp(t)
	dir := t.TempDir()
	p := script(t, "echo.js", "echo")
	receipt := filepath.Join(dir, "receipt.json")
	res := cli(a, "", "run", "--json", "--engine", "fake", "--receipt", receipt, "--input", `{"b":2,"a":1}`, p)
	require.Equal(t, exitOK, res.code, res.stderr)
	stored := filepath.Join(dir, "run.json")
	require.NoError(t, os.WriteFile(stored, []byte(res.stdout), 0o600))

	b, err := os.ReadFile(receipt)
	require.NoError(t, err)
	var r record.Receipt
	require.NoError(t, json.Unmarshal(b, &r))
	canon, err := r.Canonical()
	require.NoError(t, err)
	assert.Equal(t, string(canon)+"\n", string(b), "the receipt file is canonical JSON")

	for _, rec := range []string{receipt, stored} {
		res = cli(a, "", "verify", "--record", rec, "--input", `{"a":1, "b":2}`, p)
		assert.Equal(t, exitOK, res.code, res.stderr)
		assert.True(t, strings.HasPrefix(res.stdout, "verified: script "+string(record.AddressOf([]byte("echo")))), res.stdout)

		res = cli(a, "", "verify", "--record", rec, "--input", `{"a":2}`, p)
		assert.Equal(t, exitFailure, res.code)
		assert.Contains(t, res.stderr, "the input's digest")
	}
	changed := filepath.Join(dir, "changed.json")
	require.NoError(t, os.WriteFile(changed, []byte(strings.Replace(readFile(t, stored), `"value":{"a":1,"b":2}`, `"value":{"a":1,"b":3}`, 1)), 0o600))
	res = cli(a, "", "verify", "--record", changed, "--input", `{"a":1,"b":2}`, p)
	assert.Equal(t, exitFailure, res.code)
	assert.Contains(t, res.stderr, "the value's digest")

	res = cli(a, "", "verify", "--input", `{}`, p)
	assert.Equal(t, exitUsage, res.code)
	res = cli(a, "", "verify", "--record", p, p)
	assert.Equal(t, exitUsage, res.code, "a script is not a record")
	res = cli(a, "", "run", "--engine", "fake", "--receipt", filepath.Join(dir, "no", "such", "dir"), p)
	assert.Equal(t, exitUsage, res.code, "an unwritable receipt is refused before the run")
}

// verify refuses a record that proves nothing (an outcome of
// limitExceeded with no failure and no digest, an outcome outside the
// vocabulary, ok with a limit kind), printing the reason naming the field,
// with the exit code of a record that does not verify.
func TestVerifyRefusesRecordsThatProveNothing(t *testing.T) {
	a, _ := fakeApp(t)
	dir := t.TempDir()
	p := script(t, "echo.js", "echo")
	receipt := filepath.Join(dir, "receipt.json")
	res := cli(a, "", "run", "--json", "--engine", "fake", "--receipt", receipt, "--input", `{"a":1}`, p)
	require.Equal(t, exitOK, res.code, res.stderr)

	var run map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &run))
	var bare map[string]any
	require.NoError(t, json.Unmarshal([]byte(readFile(t, receipt)), &bare))
	for _, tc := range []struct {
		name   string
		change func(object, receipt map[string]any)
		want   string
	}{
		{"limitExceeded with no failure and no digest", func(o, r map[string]any) {
			delete(o, "value")
			delete(r, "outputDigest")
			r["outcome"] = "limitExceeded"
		}, "outcome limitExceeded has an output, but it has no outputDigest"},
		{"an outcome outside the vocabulary", func(_, r map[string]any) { r["outcome"] = "fine" }, `outcome "fine" is not one of ok,`},
		{"ok with a limit kind", func(_, r map[string]any) { r["limitKind"] = "cpu" }, "limitKind cpu does not go with outcome ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, whole := range []bool{true, false} {
				var object, rcpt map[string]any
				if whole {
					object = clone(t, run)
					rcpt = object["receipt"].(map[string]any)
				} else {
					rcpt = clone(t, bare)
					object = rcpt
				}
				tc.change(object, rcpt)
				if whole {
					// "ok" agrees with the outcome, or the text reads two ways.
					object["ok"] = rcpt["outcome"] == record.OutcomeOK
				}
				b, err := json.Marshal(object)
				require.NoError(t, err)
				stored := filepath.Join(t.TempDir(), "stored.json")
				require.NoError(t, os.WriteFile(stored, b, 0o600))
				res := cli(a, "", "verify", "--record", stored, "--input", `{"a":1}`, p)
				assert.Equal(t, exitFailure, res.code, "whole record %v: %s", whole, res.stderr)
				assert.Contains(t, res.stderr, "sandbank: effect: record does not verify: the receipt's "+tc.want, "whole record %v", whole)
				assert.Empty(t, res.stdout)
			}
		})
	}
}

// clone deep-copies a decoded JSON object.
func clone(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(m)
	require.NoError(t, err)
	var c map[string]any
	require.NoError(t, json.Unmarshal(b, &c))
	return c
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return string(b)
}

// A fake engine that logs what its script says, one line per line, the
// lines starting "!" at error level.
func loggingApp(t *testing.T) *app {
	a, rec := fakeApp(t)
	a.newRegistry = fakeRegistry(rec, func(_ context.Context, req spi.Request) (spi.Outcome, error) {
		for _, l := range strings.Split(string(req.Script), "\n") {
			if strings.HasPrefix(l, "!") {
				req.Log(spi.LevelError, spi.StreamStderr, l[1:])
			} else {
				req.Log(spi.LevelInfo, spi.StreamStdout, l)
			}
		}
		if strings.Contains(string(req.Script), "fail") {
			return spi.Threw("Error", "failed"), nil
		}
		return spi.OK([]byte(`1`)), nil
	})
	return a
}

// run prints the script's lines on stderr, in order, also for a failing
// run; --quiet prints none; --json has them too.
func TestRunPrintsLogsOnStderr(t *testing.T) {
	a := loggingApp(t)
	p := script(t, "l.js", "one\n!two\nthree")
	res := cli(a, "", "run", "--engine", "fake", p)
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Equal(t, "1\n", res.stdout)
	assert.Equal(t, "one\nerror: two\nthree\n", res.stderr)

	res = cli(a, "", "run", "--engine", "fake", script(t, "f.js", "before\nfail"))
	assert.Equal(t, exitFailure, res.code)
	assert.True(t, strings.HasPrefix(res.stderr, "before\nfail\n"), res.stderr)

	res = cli(a, "", "run", "--quiet", "--engine", "fake", p)
	assert.Equal(t, exitOK, res.code)
	assert.Empty(t, res.stderr)

	res = cli(a, "", "run", "--quiet", "--json", "--engine", "fake", p)
	var got struct{ Logs []record.LogLine }
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &got))
	require.Len(t, got.Logs, 3)
	assert.Equal(t, "two", got.Logs[1].Text)
	assert.Equal(t, spi.LevelError, got.Logs[1].Level)
}
