package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/server"
	"github.com/sandbank/sandbank/storage"
	"github.com/sandbank/sandbank/tenant"
)

func TestServeRefusals(t *testing.T) {
	t.Setenv(tenant.EnvVar, "")
	for name, args := range map[string][]string{
		"dev off loopback":     {"serve", "--dev", "--addr", "0.0.0.0:0"},
		"dev on a LAN name":    {"serve", "--dev", "--addr", "example.com:8080"},
		"no tenants":           {"serve", "--addr", "127.0.0.1:0"},
		"dev with tenants":     {"serve", "--dev", "--tenants", "x.json"},
		"missing tenants":      {"serve", "--tenants", "/nonexistent/tenants.json"},
		"bad log format":       {"serve", "--dev", "--log-format", "xml"},
		"address without port": {"serve", "--dev", "--addr", "127.0.0.1"},
	} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(args, strings.NewReader(""), &stdout, &stderr)
			assert.Equal(t, exitUsage, code, stderr.String())
			assert.Empty(t, stdout.String())
		})
	}
	t.Setenv(tenant.EnvVar, `{"tenants":[]}`)
	var stdout, stderr bytes.Buffer
	assert.Equal(t, exitUsage, run([]string{"serve"}, strings.NewReader(""), &stdout, &stderr))
	assert.Contains(t, stderr.String(), tenant.EnvVar)
}

func TestServeNewKey(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, exitOK, run([]string{"serve", "--new-key"}, strings.NewReader(""), &stdout, &stderr), stderr.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.Len(t, lines, 2)
	key := strings.TrimSpace(strings.TrimPrefix(lines[0], "key:"))
	digest := strings.TrimSpace(strings.TrimPrefix(lines[1], "digest:"))
	assert.Equal(t, tenant.HashKey(key), digest)
}

// TestServeDataDir: --data-dir names the data directory; without it the
// default is under $XDG_STATE_HOME (or ~/.local/state); --in-memory keeps
// none, and refuses --data-dir alongside.
func TestServeDataDir(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	d, err := serveDataDir(&serveOptions{})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(state, "sandbank"), d)
	d, err = serveDataDir(&serveOptions{dataDir: "/srv/sandbank"})
	require.NoError(t, err)
	assert.Equal(t, "/srv/sandbank", d)
	d, err = serveDataDir(&serveOptions{inMemory: true})
	require.NoError(t, err)
	assert.Empty(t, d)
	_, err = serveDataDir(&serveOptions{inMemory: true, dataDir: "x"})
	var ee *exitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, exitUsage, ee.code)
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", state)
	d, err = serveDataDir(&serveOptions{})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(state, ".local", "state", "sandbank"), d)
}

// TestServeDataDirInUse: 'sandbank serve' refuses a data directory
// another server holds (here, a server of this process), names the
// process that holds it, and exits as infrastructure (retryable: the
// directory is free once that server ends) before it listens.
func TestServeDataDirInUse(t *testing.T) {
	dir := t.TempDir()
	data, err := storage.OpenData(&storage.DataOptions{Dir: dir})
	require.NoError(t, err)
	holder, err := server.New(registry.New(), &server.Options{Data: data})
	require.NoError(t, err)
	defer holder.Close()
	var stdout bytes.Buffer
	stderr := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"serve", "--dev", "--addr", "127.0.0.1:0", "--data-dir", dir}, strings.NewReader(""), &stdout, stderr)
	}()
	select {
	case code := <-done:
		assert.Equal(t, exitUntyped, code, stderr.String())
	case <-time.After(upstreamBound): // far above a refusal's time: only a server that serves reaches it
		t.Fatalf("serve did not refuse the directory; it said: %s", stderr.String())
	}
	assert.Contains(t, stderr.String(), fmt.Sprintf("process %d holds", os.Getpid()))
	assert.NotContains(t, stderr.String(), "serving on")
}
