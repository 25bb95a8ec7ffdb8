package server

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSmoke(t *testing.T) {
	l := startServer(t, testRegistry(t), nil)
	c := &http.Client{}
	code, _, body := post(t, c, l.url+"/v1/runs", "", map[string]any{"language": "javascript", "source": "input.n * 2", "input": map[string]any{"n": 21}})
	t.Log(code, body)
	require.Equal(t, 200, code)
	assert.Equal(t, 42.0, body["value"])
	code, _, body = post(t, c, l.url+"/v1/runs", "", map[string]any{"engine": "starlark", "source": "fail('x')"})
	t.Log(code, body)
	code, _, body = post(t, c, l.url+"/v1/runs", "", map[string]any{"engine": "goja", "source": "1", "bogus": 1})
	t.Log(code, body)
	resp, err := c.Get(l.url + "/v1/openapi.json")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
}
