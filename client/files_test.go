package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/client"
	"github.com/sandbank/sandbank/spi"
)

// TestRunFilesCrossTheWire: Run sends its input files as the server's
// API has them ({name, data} with data in base64) and returns the
// record's output files.
func TestRunFilesCrossTheWire(t *testing.T) {
	var got json.RawMessage
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err == nil {
			got = b
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"value":true,"files":[{"name":"chart.png","data":"iVBORw=="}],"logs":[],"stats":{},"receipt":{}}`)
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, nil)
	require.NoError(t, err)
	rec, err := c.Run(context.Background(), client.Run{Language: "python", Source: "x",
		Files: []spi.File{{Name: "data.csv", Data: []byte("a,b\n")}, {Name: "b.bin", Data: []byte{0, 255}}}})
	require.NoError(t, err)
	assert.Equal(t, []spi.File{{Name: "chart.png", Data: []byte{0x89, 'P', 'N', 'G'}}}, rec.Files)

	var body struct {
		Files []map[string]string `json:"files"`
	}
	require.NoError(t, json.Unmarshal(got, &body), "%s", got)
	assert.Equal(t, []map[string]string{{"name": "data.csv", "data": "YSxiCg=="}, {"name": "b.bin", "data": "AP8="}}, body.Files)
}
