package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

// filesRegistry holds one engine, "files" (javascript), that declares
// files and answers every run with its input files as output files, each
// renamed "out-NAME", and counts the runs that reached it; *got holds
// the input files of the last run.
func filesRegistry(t *testing.T, got *[]spi.File) (*registry.Registry, *fakebackend.Backend) {
	t.Helper()
	caps := fakebackend.Capabilities()
	caps.Files = true
	b := fakebackend.New(caps, func(_ context.Context, req spi.Request) (spi.Outcome, error) {
		*got = req.Files
		out := spi.OK(req.Input)
		for _, f := range req.Files {
			out.Files = append(out.Files, spi.File{Name: "out-" + f.Name, Data: f.Data})
		}
		return out, nil
	})
	r := registry.New()
	r.Register(registry.Entry{Engine: "files", Language: "javascript", Capabilities: caps,
		Factory: func() (spi.Backend, error) { return b.Plain(), nil }})
	return r, b
}

// TestRunFilesInAndOut sends input files in base64 and gets the output
// files back in the record, in base64, as the document declares them.
func TestRunFilesInAndOut(t *testing.T) {
	var got []spi.File
	reg, _ := filesRegistry(t, &got)
	l := startServer(t, reg, nil)
	doc := fetchDocument(t, l.url)
	body := map[string]any{"engine": "files", "source": "x", "files": []map[string]any{
		{"name": "data.csv", "data": []byte("a,b\n1,2\n")},
		{"name": "b.bin", "data": []byte{0, 1, 255}},
	}}
	status, _, out := post(t, http.DefaultClient, l.url+"/v1/runs", "", body)
	require.Equal(t, http.StatusOK, status, "%v", out)
	assert.Equal(t, []spi.File{{Name: "b.bin", Data: []byte{0, 1, 255}}, {Name: "data.csv", Data: []byte("a,b\n1,2\n")}}, got, "in name order")
	assert.Equal(t, []any{
		map[string]any{"name": "out-b.bin", "data": "AAH/"},
		map[string]any{"name": "out-data.csv", "data": "YSxiCjEsMgo="},
	}, out["files"], "in name order, base64")
	receipt, _ := out["receipt"].(map[string]any)
	assert.Len(t, receipt["outputFiles"], 2, "each output file is in the receipt")

	// The live response agrees with the document.
	resp := postRaw(t, l.url+"/v1/runs", body)
	doc.check(t, http.MethodPost, "/v1/runs", resp.resp, resp.body)
}

// TestRunFilesHostileNames: input files the effect refuses (a path, an
// absolute path, a NUL, a duplicate, 10,000 files) are refused as the
// caller's doing before the backend runs; nothing reaches it.
func TestRunFilesHostileNames(t *testing.T) {
	var got []spi.File
	reg, b := filesRegistry(t, &got)
	l := startServer(t, reg, nil)
	one := func(name string) map[string]any { return map[string]any{"name": name, "data": []byte("x")} }
	many := make([]map[string]any, 10000)
	for i := range many {
		many[i] = one(fmt.Sprintf("f%d", i))
	}
	for name, files := range map[string]any{
		"a path":          []any{one("../x")},
		"absolute":        []any{one("/etc/passwd")},
		"a NUL":           []any{one("a\x00b")},
		"empty":           []any{one("")},
		"a duplicate":     []any{one("a"), one("a")},
		"a name too long": []any{one(strings.Repeat("a", 200))},
	} {
		status, _, out := post(t, http.DefaultClient, l.url+"/v1/runs", "", map[string]any{"engine": "files", "source": "x", "files": files})
		assert.Equal(t, http.StatusBadRequest, status, "%s: %v", name, out)
		assert.Equal(t, KindInvalidCall, out["kind"], "%s: %v", name, out)
		assert.Contains(t, out["detail"], "file", name)
	}
	// Past the count bound: the effect's typed inputTooLarge, a 200 whose
	// record holds the failure, as for an input too large.
	status, _, out := post(t, http.DefaultClient, l.url+"/v1/runs", "", map[string]any{"engine": "files", "source": "x", "files": many})
	require.Equal(t, http.StatusOK, status, "%v", out)
	failure, _ := out["failure"].(map[string]any)
	assert.Equal(t, "inputTooLarge", failure["code"], "%v", out)
	assert.Nil(t, out["files"])
	assert.Zero(t, b.Counts().Calls, "no run reached the backend")
}

// TestDocumentDeclaresFiles: the OpenAPI document declares the request's
// input files and the record's output files, each {name, data} with data
// in base64.
func TestDocumentDeclaresFiles(t *testing.T) {
	l := startServer(t, testRegistry(t), nil)
	doc := fetchDocument(t, l.url)
	schemas := doc.raw["components"].(map[string]any)["schemas"].(map[string]any)
	for _, owner := range []string{"RunRequest", "RunAnswer"} {
		files, ok := schemas[owner].(map[string]any)["properties"].(map[string]any)["files"].(map[string]any)
		require.True(t, ok, "%s declares files", owner)
		assert.Equal(t, "#/components/schemas/File", files["items"].(map[string]any)["$ref"], owner)
	}
	file := schemas["File"].(map[string]any)
	assert.ElementsMatch(t, []any{"name", "data"}, file["required"])
	data := file["properties"].(map[string]any)["data"].(map[string]any)
	assert.Equal(t, "base64", data["contentEncoding"])
}

type rawResponse struct {
	resp *http.Response
	body []byte
}

// postRaw posts body as JSON and returns the response with its body read.
func postRaw(t *testing.T, url string, body any) rawResponse {
	t.Helper()
	var r rawResponse
	b, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	r.resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer r.resp.Body.Close()
	r.body, err = io.ReadAll(r.resp.Body)
	require.NoError(t, err)
	return r
}
