package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/record"
)

// TestMCPSignsReceipts: 'sandbank mcp --sign-key FILE' signs the receipt
// a run tool returns; 'sandbank verify --key' accepts it with the key's
// public half and refuses it with another key.
func TestMCPSignsReceipts(t *testing.T) {
	keys, _ := fakeApp(t)
	dir := t.TempDir()
	host, other := filepath.Join(dir, "host"), filepath.Join(dir, "other")
	require.Equal(t, exitOK, cli(keys, "", "keygen", host).code)
	require.Equal(t, exitOK, cli(keys, "", "keygen", other).code)

	const src = `({ n: 2 * 21 })`
	cs, _ := serveUpstreams(t, "--sign-key", host+".key")
	r := runScript(t, cs, src)
	require.True(t, r.OK, "%+v", r)
	require.NotNil(t, r.Receipt)
	require.NotNil(t, r.Receipt.Signature, "the receipt is signed")
	assert.Equal(t, record.SignatureEd25519, r.Receipt.Signature.Algorithm)

	b, err := json.Marshal(r.Receipt)
	require.NoError(t, err)
	receipt := filepath.Join(dir, "receipt.json")
	require.NoError(t, os.WriteFile(receipt, b, 0o600))
	p := script(t, "s.js", src)
	res := cli(keys, "", "verify", "--key", host+".pub", "--record", receipt, p)
	assert.Equal(t, exitOK, res.code, res.stderr)
	res = cli(keys, "", "verify", "--key", other+".pub", "--record", receipt, p)
	assert.Equal(t, exitFailure, res.code)
	assert.Contains(t, res.stderr, "which is not a trusted key")

	// A key file others may read is refused, as by run and serve.
	require.NoError(t, os.Chmod(other+".key", 0o644))
	a, _, _ := gojaApp(t)
	res = cli(a, "", "mcp", "--sign-key", other+".key")
	assert.Equal(t, exitUsage, res.code, res.stderr)
	assert.Contains(t, res.stderr, "--sign-key")
}
