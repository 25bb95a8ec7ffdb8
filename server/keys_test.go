package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/storage"
	"github.com/sandbank/sandbank/tenant"
)

// getKeys fetches the published keys, without an API key.
func getKeys(t *testing.T, url string) receipt.PublishedKeys {
	t.Helper()
	resp, err := http.Get(url + KeysPath)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var doc receipt.PublishedKeys
	require.NoError(t, json.Unmarshal(b, &doc), "%s", b)
	return doc
}

// runRecord runs source on goja with the key and returns the record.
func runRecord(t *testing.T, url, key, source string, input any) *effect.Record {
	t.Helper()
	body, err := json.Marshal(map[string]any{"engine": "goja", "source": source, "input": input})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, url+"/v1/runs", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	var rec effect.Record
	require.NoError(t, json.Unmarshal(b, &rec), "%s", b)
	return &rec
}

// The server signs every receipt with its key and publishes the key, and
// the retired ones with their dates, at KeysPath without an API key; a
// receipt verifies against the published keys.
func TestServerSignsAndPublishesKeys(t *testing.T) {
	key, digest, err := tenant.NewKey()
	require.NoError(t, err)
	set, err := tenant.Parse(fmt.Appendf(nil, `{"tenants":[{"name":"a","keys":[%q]}]}`, digest))
	require.NoError(t, err)
	signer, err := receipt.GenerateEd25519Signer()
	require.NoError(t, err)
	old, err := receipt.GenerateEd25519Signer()
	require.NoError(t, err)
	retired := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	l := startServer(t, testRegistry(t), &Options{Tenants: set, Signer: signer,
		RetiredKeys: []receipt.TrustedKey{{PublicKey: old.PublicKey(), Retired: retired}}})

	doc := getKeys(t, l.url)
	require.Len(t, doc.Keys, 2)
	assert.Equal(t, record.KeyIDOf(signer.PublicKey()), doc.Keys[0].KeyID, "the current key first")
	assert.True(t, doc.Keys[0].Retired.IsZero())
	assert.Equal(t, record.KeyIDOf(old.PublicKey()), doc.Keys[1].KeyID)
	assert.Equal(t, retired, doc.Keys[1].Retired)
	assert.Equal(t, doc, l.Keys())

	rec := runRecord(t, l.url, key, "input.n * 2", map[string]int{"n": 21})
	require.NotNil(t, rec.Receipt.Signature)
	assert.Equal(t, doc.Keys[0].KeyID, rec.Receipt.Signature.KeyID)
	ks, err := receipt.NewKeySet(doc.Keys...)
	require.NoError(t, err)
	require.NoError(t, receipt.Verify(rec, []byte("input.n * 2"), map[string]int{"n": 21}, receipt.WithKeys(ks), receipt.RequireSignature()))

	// A typed failure's receipt is signed too.
	rec = runRecord(t, l.url, key, "throw new Error('x')", nil)
	require.NotNil(t, rec.Failure)
	require.NoError(t, receipt.Verify(rec, []byte("throw new Error('x')"), nil, receipt.WithKeys(ks), receipt.RequireSignature()))
}

// Without a Signer the server signs with a key of its own, generated on
// New and published; a retired key without a date, or listed as current
// too, is refused.
func TestServerGeneratesAKey(t *testing.T) {
	l := startServer(t, testRegistry(t), nil)
	doc := getKeys(t, l.url)
	require.Len(t, doc.Keys, 1)
	rec := runRecord(t, l.url, "", "1", nil)
	require.NotNil(t, rec.Receipt.Signature)
	assert.Equal(t, doc.Keys[0].KeyID, rec.Receipt.Signature.KeyID)

	signer, err := receipt.GenerateEd25519Signer()
	require.NoError(t, err)
	for name, retired := range map[string][]receipt.TrustedKey{
		"no date":     {{PublicKey: signer.PublicKey()}},
		"the current": {{PublicKey: signer.PublicKey(), Retired: time.Now()}},
		"not a key":   {{PublicKey: []byte("short"), Retired: time.Now()}},
	} {
		opts := &Options{Signer: signer, RetiredKeys: retired}
		if name == "no date" {
			other, err := receipt.GenerateEd25519Signer()
			require.NoError(t, err)
			opts.Signer = other
		}
		_, err := New(testRegistry(t), opts)
		require.ErrorIs(t, err, ErrInvalidOptions, name)
	}
}

// TestDataDirKeepsTheSigningKey: a server with a data directory and no
// Signer generates its key into the directory on the first start and
// signs with the same key after a restart, so the receipts it kept still
// verify against the keys it publishes.
func TestDataDirKeepsTheSigningKey(t *testing.T) {
	dir := t.TempDir()
	first := startServer(t, testRegistry(t), &Options{Data: dataIn(t, dir, nil)})
	before := getKeys(t, first.url)
	require.Len(t, before.Keys, 1)
	info, err := os.Stat(storage.SigningKeyFile(dir))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	stopServer(t, first) // a directory is one server's
	second := startServer(t, testRegistry(t), &Options{Data: dataIn(t, dir, nil)})
	after := getKeys(t, second.url)
	require.Len(t, after.Keys, 1)
	assert.Equal(t, before.Keys[0].KeyID, after.Keys[0].KeyID, "the same key after a restart")
	rec := runRecord(t, second.url, "", "1", nil)
	require.NotNil(t, rec.Receipt.Signature)
	assert.Equal(t, before.Keys[0].KeyID, rec.Receipt.Signature.KeyID)
}
