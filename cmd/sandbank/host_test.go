package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunHost(t *testing.T) {
	orders := script(t, "orders.json", `[{"id":1,"cents":1250},{"id":2,"cents":990}]`)
	rates := script(t, "rates.json", `{"eur":"1.08"}`)
	js := script(t, "report.js", `const [o, r] = await Promise.all([host.orders({since: "2026-01-01"}), host.rates()]);
({total: o.reduce((a, x) => a + x.cents, 0), eur: r.eur})`)

	res := runMain("", "run", "--engine", "goja", "--json", "--host", "orders="+orders, "--host", "rates="+rates, js)
	require.Equal(t, exitOK, res.code, res.stderr)
	var got struct {
		OK        bool
		Value     json.RawMessage
		HostCalls []hostCall
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &got), res.stdout)
	assert.JSONEq(t, `{"total":2240,"eur":"1.08"}`, string(got.Value))
	require.Len(t, got.HostCalls, 2, "the calls made, in order")
	assert.Equal(t, "orders", got.HostCalls[0].Name)
	assert.JSONEq(t, `{"since":"2026-01-01"}`, string(got.HostCalls[0].Args))
	assert.Equal(t, "rates", got.HostCalls[1].Name)
	assert.JSONEq(t, `null`, string(got.HostCalls[1].Args))

	// Without --json, the value only.
	res = runMain("", "run", "--engine", "goja", "--host", "orders="+orders, "--host", "rates="+rates, js)
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.JSONEq(t, `{"total":2240,"eur":"1.08"}`, res.stdout)

	// A typed failure lists the calls too.
	throws := script(t, "throws.js", `await host.orders(1); await host.nope()`)
	res = runMain("", "run", "--engine", "goja", "--json", "--host", "orders="+orders, throws)
	require.Equal(t, exitFailure, res.code, res.stderr)
	var failed struct {
		Code      string
		HostCalls []hostCall
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &failed), res.stdout)
	assert.Equal(t, "scriptError", failed.Code)
	assert.Len(t, failed.HostCalls, 1, "the unknown function was never called")
}

func TestRunHostUsageErrors(t *testing.T) {
	good := script(t, "a.json", `1`)
	bad := script(t, "b.json", `{`)
	js := script(t, "a.js", `1`)
	for _, args := range [][]string{
		{"--host", "nofile"},
		{"--host", "=x.json"},
		{"--host", "a=" + good, "--host", "a=" + good},
		{"--host", "a=" + bad},
		{"--host", "a=/does/not/exist.json"},
		{"--host", "not-a-name=" + good},
	} {
		res := runMain("", append([]string{"run", "--engine", "goja"}, append(args, js)...)...)
		assert.Equal(t, exitUsage, res.code, "%v: %s", args, res.stderr)
		assertOneLine(t, res.stderr)
	}
}
