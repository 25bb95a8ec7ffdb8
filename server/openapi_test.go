package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/tenant"
)

// document is the served OpenAPI document, and a validator of responses
// against it.
type document struct {
	raw  map[string]any
	c    *jsonschema.Compiler
	seen map[string]bool // "METHOD path" exercised
}

const docURL = "mem://openapi.json"

func fetchDocument(t *testing.T, url string) *document {
	t.Helper()
	resp, err := http.Get(url + "/v1/openapi.json")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(b, &raw))
	require.Equal(t, "3.1.0", raw["openapi"])
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	require.NoError(t, c.AddResource(docURL, doc))
	return &document{raw: raw, c: c, seen: map[string]bool{}}
}

// pointerEscape escapes a JSON pointer token.
func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// check validates one live response against the document: its status must
// be declared for the operation, its content type too, and its body must
// be an instance of the declared schema.
func (d *document) check(t *testing.T, method, path string, resp *http.Response, body []byte) {
	t.Helper()
	d.seen[method+" "+path] = true
	paths := d.raw["paths"].(map[string]any)
	item, ok := paths[path].(map[string]any)
	require.True(t, ok, "path %s is not in the document", path)
	op, ok := item[strings.ToLower(method)].(map[string]any)
	require.True(t, ok, "%s %s is not in the document", method, path)
	responses := op["responses"].(map[string]any)
	status := fmt.Sprint(resp.StatusCode)
	r, ok := responses[status].(map[string]any)
	require.True(t, ok, "%s %s answered %s, which the document does not declare (it declares %v); body %s", method, path, status, keys(responses), body)
	content, _ := r["content"].(map[string]any)
	if len(content) == 0 {
		return
	}
	ct, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	require.NoError(t, err)
	_, ok = content[ct]
	require.True(t, ok, "%s %s %s: content type %s not declared (%v)", method, path, status, ct, keys(content))
	loc := fmt.Sprintf("%s#/paths/%s/%s/responses/%s/content/%s/schema", docURL, pointerEscape(path), strings.ToLower(method), status, pointerEscape(ct))
	sch, err := d.c.Compile(loc)
	require.NoError(t, err, loc)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	require.NoError(t, err)
	if err := sch.Validate(inst); err != nil {
		t.Errorf("%s %s %s: the body disagrees with the document: %v\nbody: %s", method, path, status, err, body)
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestResponsesAgreeWithTheDocument sends a request of every kind to a
// live server and validates each response against the OpenAPI document
// the server serves: every operation is exercised, every status it
// answers is declared, and every body is an instance of its schema.
func TestResponsesAgreeWithTheDocument(t *testing.T) {
	key, digest, err := tenant.NewKey()
	require.NoError(t, err)
	limited, limitedDigest, err := tenant.NewKey()
	require.NoError(t, err)
	set, err := tenant.Parse(fmt.Appendf(nil, `{"tenants":[{"name":"a","keys":[%q],"engines":["goja","starlark"]},{"name":"l","keys":[%q],"ratePerSecond":0.001,"burst":1}]}`, digest, limitedDigest))
	require.NoError(t, err)
	l := startServer(t, testRegistry(t), &Options{Tenants: set, MaxBodyBytes: 64 << 10})
	d := fetchDocument(t, l.url)
	c := &http.Client{Timeout: time.Minute}

	send := func(method, path, key, ct string, body string) (*http.Response, []byte) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, l.url+path, rd)
		require.NoError(t, err)
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := c.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, b
	}
	type tc struct {
		method, path, key, ct, body string
		status                      int
	}
	const js = "application/json"
	addr := func() string {
		resp, b := send("POST", "/v1/scripts", key, js, `{"source":"input"}`)
		require.Equal(t, 200, resp.StatusCode)
		d.check(t, "POST", "/v1/scripts", resp, b)
		var s ScriptStored
		require.NoError(t, json.Unmarshal(b, &s))
		return string(s.Script)
	}()
	for _, c := range []tc{
		{"POST", "/v1/runs", key, js, `{"engine":"goja","source":"input.n*2","input":{"n":2}}`, 200},
		{"POST", "/v1/runs", key, js, `{"engine":"goja","source":"console.log('hi'); [1,{\"a\":null}]"}`, 200},
		{"POST", "/v1/runs", key, js, `{"engine":"goja","source":"throw new Error('x')"}`, 200},
		{"POST", "/v1/runs", key, js, `{"engine":"goja","source":"for(;;){}","limits":{"wallClockMs":100}}`, 200},
		{"POST", "/v1/runs", key, js, `{"engine":"goja","source":"1","shape":{"type":"string"}}`, 200},
		{"POST", "/v1/runs", key, js, `{"engine":"goja","script":"` + addr + `","input":7}`, 200},
		{"POST", "/v1/runs", key, js, `{"engine":"goja","sourceBase64":"MSsx"}`, 200},
		{"POST", "/v1/runs", key, js, `{"engine":"nope","source":"1"}`, 400},
		{"POST", "/v1/runs", key, js, `{"engine":"goja","source":"1","shape":{"type":9}}`, 400},
		{"POST", "/v1/runs", key, js, `{"engine":"goja"`, 400},
		{"POST", "/v1/runs", "", js, `{"engine":"goja","source":"1"}`, 401},
		{"POST", "/v1/runs", key, js, `{"engine":"quickjs","source":"1"}`, 403},
		{"POST", "/v1/runs", key, js, `{"engine":"goja","script":"sha256:` + strings.Repeat("0", 64) + `"}`, 404},
		{"POST", "/v1/runs", key, js, `{"engine":"goja","source":"` + strings.Repeat("x", 70<<10) + `"}`, 413},
		{"POST", "/v1/runs", key, "text/plain", `{"engine":"goja","source":"1"}`, 415},
		{"POST", "/v1/runs", key, js, `{"engine":"goja","source":"1","extra":true}`, 422},
		{"POST", "/v1/runs", key, js, `{"engine":"goja","source":"1","limits":{"wallClockMs":-1}}`, 422},
		{"POST", "/v1/runs", limited, js, `{"engine":"goja","source":"1"}`, 200},
		{"POST", "/v1/runs", limited, js, `{"engine":"goja","source":"1"}`, 429},
		{"POST", "/v1/scripts", key, js, `{}`, 400},
		{"POST", "/v1/scripts", "", js, `{"source":"1"}`, 401},
		{"POST", "/v1/scripts", key, js, `{"source":1}`, 422},
		{"GET", "/v1/engines", key, "", "", 200},
		{"GET", "/v1/engines", "bad", "", "", 401},
		{"GET", "/healthz", "", "", "", 200},
		{"GET", KeysPath, "", "", "", 200},
	} {
		resp, b := send(c.method, c.path, c.key, c.ct, c.body)
		if !assert.Equal(t, c.status, resp.StatusCode, "%s %s %.80s: %s", c.method, c.path, c.body, b) {
			continue
		}
		d.check(t, c.method, c.path, resp, b)
		if resp.StatusCode == 429 || resp.StatusCode == 503 {
			assert.NotEmpty(t, resp.Header.Get("Retry-After"))
		}
		if resp.StatusCode >= 400 {
			assertRetryable(t, resp.StatusCode, b)
		}
	}

	// A run's receipt, by the id its answer named.
	resp, b := send("POST", "/v1/runs", key, js, `{"engine":"goja","source":"1"}`)
	require.Equal(t, 200, resp.StatusCode)
	run := resp.Header.Get(RunHeader)
	require.NotEmpty(t, run)
	for _, c := range []tc{
		{"GET", "/v1/runs/" + run + "/receipt", key, "", "", 200},
		{"GET", "/v1/runs/" + strings.Repeat("0", 32) + "/receipt", key, "", "", 404},
		{"GET", "/v1/runs/nope/receipt", key, "", "", 422},
		{"GET", "/v1/runs/" + run + "/receipt", "", "", "", 401},
	} {
		resp, b = send(c.method, c.path, c.key, c.ct, c.body)
		if assert.Equal(t, c.status, resp.StatusCode, "%s %s: %s", c.method, c.path, b) {
			d.check(t, c.method, "/v1/runs/{run}/receipt", resp, b)
		}
	}

	// A resumption's refusals (its answers are durable_test.go's).
	for _, c := range []tc{
		{"POST", "/v1/runs/" + strings.Repeat("0", 32) + "/resume", key, js, `{"answer":true}`, 404},
		{"POST", "/v1/runs/nope/resume", key, js, `{"answer":true}`, 422},
		{"POST", "/v1/runs/" + strings.Repeat("0", 32) + "/resume", key, js, `{}`, 422},
		{"POST", "/v1/runs/" + strings.Repeat("0", 32) + "/resume", "", js, `{"answer":true}`, 401},
	} {
		resp, b = send(c.method, c.path, c.key, c.ct, c.body)
		if assert.Equal(t, c.status, resp.StatusCode, "%s %s: %s", c.method, c.path, b) {
			d.check(t, c.method, "/v1/runs/{run}/resume", resp, b)
		}
	}

	// While draining, health is 503 and a run is a retryable 503.
	l.draining.Store(true)
	resp, b = send("GET", "/healthz", "", "", "")
	assert.Equal(t, 503, resp.StatusCode)
	d.check(t, "GET", "/healthz", resp, b)
	resp, b = send("POST", "/v1/runs", key, js, `{"engine":"goja","source":"1"}`)
	assert.Equal(t, 503, resp.StatusCode)
	d.check(t, "POST", "/v1/runs", resp, b)
	assertRetryable(t, resp.StatusCode, b)
	l.draining.Store(false)

	// Every operation of the document was exercised.
	for path, item := range d.raw["paths"].(map[string]any) {
		for method := range item.(map[string]any) {
			assert.True(t, d.seen[strings.ToUpper(method)+" "+path], "%s %s is never exercised", method, path)
		}
	}
}

// assertRetryable checks that a Problem body carries retryable, true
// exactly for 429 and 503.
func assertRetryable(t *testing.T, status int, body []byte) {
	t.Helper()
	var p map[string]any
	require.NoError(t, json.Unmarshal(body, &p), "%s", body)
	r, ok := p["retryable"]
	if assert.True(t, ok, "%d: the problem has no retryable: %s", status, body) {
		assert.Equal(t, status == 429 || status == 503, r, "%d: %s", status, body)
	}
}

// TestDocumentSchemas: the Problem schema requires retryable, and the
// failure's code and kind list the effect's own values (hostCalls among
// the kinds).
func TestDocumentSchemas(t *testing.T) {
	l := startServer(t, testRegistry(t), nil)
	d := fetchDocument(t, l.url)
	schemas := d.raw["components"].(map[string]any)["schemas"].(map[string]any)
	problem := schemas["Problem"].(map[string]any)
	assert.Contains(t, problem["required"], "retryable")

	var failure map[string]any
	for name, s := range schemas {
		if strings.Contains(strings.ToLower(name), "failure") {
			failure = s.(map[string]any)
		}
	}
	require.NotNil(t, failure, "no failure schema among %v", keys(schemas))
	props := failure["properties"].(map[string]any)
	var codes, kinds []any
	for c := effect.CodeInputNotSerializable; c.Valid(); c++ {
		codes = append(codes, c.String())
	}
	for k := effect.LimitCPU; k.Valid(); k++ {
		kinds = append(kinds, k.String())
	}
	assert.Equal(t, codes, props["code"].(map[string]any)["enum"])
	assert.Equal(t, kinds, props["kind"].(map[string]any)["enum"])
	assert.Contains(t, props["kind"].(map[string]any)["enum"], "hostCalls")
}
