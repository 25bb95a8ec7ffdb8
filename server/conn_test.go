package server

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConnectionCap: past MaxConnections open connections, a new client
// is not served until one closes.
func TestConnectionCap(t *testing.T) {
	l := startServer(t, testRegistry(t), &Options{MaxConnections: 2, ReadHeaderTimeout: time.Minute})
	addr := strings.TrimPrefix(l.url, "http://")
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		held = append(held, c)
	}
	// Both slots are held by silent clients: a request is not served
	// within 1 s (it would be in well under that otherwise).
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	waitFor(t, func() bool { return l.openConnections() == 2 })
	_, err := c.Get(l.url + "/healthz")
	assert.Error(t, err, "a third connection was served past the cap")
	require.NoError(t, held[0].Close())
	c.Timeout = time.Minute
	resp, err := c.Get(l.url + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, held[1].Close())
}
