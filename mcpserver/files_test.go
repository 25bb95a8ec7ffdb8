package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/mcpserver"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

// chartPNG is a small PNG image: a chart, as far as a test can tell.
func chartPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 8, 4))
	for x := range 8 {
		img.Set(x, 3-x/2, color.RGBA{R: 200, A: 255})
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

// filesServer is a server whose one engine, "plot" (python), declares
// files and answers every run with the output files out, after noting
// the request's input files in got.
func filesServer(t *testing.T, out []spi.File, got *[]spi.File) (*mcpserver.Server, *fakebackend.Backend) {
	t.Helper()
	caps := fakebackend.Capabilities()
	caps.Language, caps.Files = "python", true
	b := fakebackend.New(caps, func(_ context.Context, req spi.Request) (spi.Outcome, error) {
		*got = req.Files
		o := spi.OK(json.RawMessage(`{"rows":2}`))
		o.Files = out
		return o, nil
	})
	r := registry.New()
	r.Register(registry.Entry{Engine: "plot", Language: "python", Capabilities: caps,
		Factory: func() (spi.Backend, error) { return b.Plain(), nil }})
	srv, err := mcpserver.New(r, nil)
	require.NoError(t, err)
	return srv, b
}

// TestAClientSeesTheChart: the official MCP SDK client hands the run
// tool an input file in base64 and receives the PNG the script wrote as
// image content (detected by its bytes: its name says nothing), and a
// CSV as an embedded text resource.
func TestAClientSeesTheChart(t *testing.T) {
	chart := chartPNG(t)
	var got []spi.File
	srv, _ := filesServer(t, []spi.File{
		{Name: "plot", Data: chart},
		{Name: "summary.csv", Data: []byte("n,mean\n2,1.5\n")},
	}, &got)
	cs := connect(t, srv, nil)
	res, r, err := call(t, cs, "run_python", map[string]any{
		"script": "x",
		"files":  []map[string]any{{"name": "data.csv", "data": []byte("a,b\n1,2\n")}},
	})
	require.NoError(t, err)
	require.False(t, res.IsError, textOf(res))
	assert.True(t, r.OK)
	assert.Equal(t, []spi.File{{Name: "data.csv", Data: []byte("a,b\n1,2\n")}}, got, "the input file reaches the engine")

	var images []*mcp.ImageContent
	var resources []*mcp.EmbeddedResource
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.ImageContent:
			images = append(images, c)
		case *mcp.EmbeddedResource:
			resources = append(resources, c)
		}
	}
	require.Len(t, images, 1, "the chart is image content")
	assert.Equal(t, "image/png", images[0].MIMEType)
	assert.Equal(t, chart, images[0].Data)
	require.Len(t, resources, 1, "the CSV is an embedded resource")
	assert.Equal(t, "sandbank:files/summary.csv", resources[0].Resource.URI)
	assert.Equal(t, "n,mean\n2,1.5\n", resources[0].Resource.Text)
	assert.Contains(t, textOf(res), "plot (image/png")
}

// TestRunToolHostileFileNames: input files the effect refuses (a path,
// an absolute path, a NUL, 10,000 files) are an error result the model
// can read, and nothing reaches the engine.
func TestRunToolHostileFileNames(t *testing.T) {
	var got []spi.File
	srv, b := filesServer(t, nil, &got)
	cs := connect(t, srv, nil)
	one := func(name string) map[string]any { return map[string]any{"name": name, "data": []byte("x")} }
	many := make([]map[string]any, 10000)
	for i := range many {
		many[i] = one(fmt.Sprintf("f%d", i))
	}
	for name, files := range map[string]any{
		"a path":       []any{one("../x")},
		"absolute":     []any{one("/etc/passwd")},
		"a NUL":        []any{one("a\x00b")},
		"a duplicate":  []any{one("a"), one("a")},
		"10,000 files": many,
	} {
		res, r, err := call(t, cs, "run_python", map[string]any{"script": "x", "files": files})
		require.NoError(t, err, name)
		assert.True(t, res.IsError, "%s: %s", name, textOf(res))
		assert.False(t, r.OK, name)
		assert.True(t, r.InvalidCall != "" || (r.Failure != nil && r.Failure.Code.String() == "inputTooLarge"), "%s: %s", name, textOf(res))
	}
	res, _, err := call(t, cs, "run_python", map[string]any{"script": "x", "files": []any{map[string]any{"name": "a", "data": "not base64!"}}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, textOf(res), "base64")
	assert.Zero(t, b.Counts().Calls, "no run reached the engine")
}

// TestRunToolDeclaresFiles: the "files" argument and its section of the
// description are there exactly when the engine declares files.
func TestRunToolDeclaresFiles(t *testing.T) {
	var got []spi.File
	withFiles, _ := filesServer(t, nil, &got)
	f := newFakes()
	for _, c := range []struct {
		srv  *mcpserver.Server
		tool string
		want bool
	}{{withFiles, "run_python", true}, {newServer(t, f, nil, "python"), "run_python", false}} {
		cs := connect(t, c.srv, nil)
		list, err := cs.ListTools(context.Background(), nil)
		require.NoError(t, err)
		var tool *mcp.Tool
		for _, tl := range list.Tools {
			if tl.Name == c.tool {
				tool = tl
			}
		}
		require.NotNil(t, tool)
		schema, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		assert.Equal(t, c.want, strings.Contains(string(schema), `"files"`), "%s", schema)
		assert.Equal(t, c.want, strings.Contains(tool.Description, `open("data.csv")`), tool.Description)
		instructions := cs.InitializeResult().Instructions
		assert.Equal(t, c.want, strings.Contains(instructions, `"files" argument`), instructions)
		assert.Equal(t, !c.want, strings.Contains(instructions, "no files and"), instructions)
	}
}
