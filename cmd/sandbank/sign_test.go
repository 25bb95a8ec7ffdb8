package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/server"
)

// keygen writes a key pair (the private key mode 0600) and never
// overwrites one.
func TestKeygen(t *testing.T) {
	a, _ := fakeApp(t)
	name := filepath.Join(t.TempDir(), "host")
	res := cli(a, "", "keygen", name)
	require.Equal(t, exitOK, res.code, res.stderr)
	pub, err := receipt.ReadPublicKeyFile(name + ".pub")
	require.NoError(t, err)
	assert.Contains(t, res.stdout, "key id:      "+pub.KeyID)
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(name + ".key")
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	}
	before := readFile(t, name+".key")
	res = cli(a, "", "keygen", name)
	assert.Equal(t, exitUsage, res.code)
	assert.Contains(t, res.stderr, "never overwrites")
	assert.Equal(t, before, readFile(t, name+".key"), "the key is untouched")
}

// run --sign-key signs the receipt; verify --key and --keys check it,
// refuse it with another key, refuse it changed after signing, and refuse
// an unsigned one; without a key verify says whether it is signed.
func TestSignAndVerifyThroughTheCLI(t *testing.T) {
	a, _ := fakeApp(t)
	dir := t.TempDir()
	host, other := filepath.Join(dir, "host"), filepath.Join(t.TempDir(), "other")
	require.Equal(t, exitOK, cli(a, "", "keygen", host).code)
	require.Equal(t, exitOK, cli(a, "", "keygen", other).code)
	p := script(t, "echo.js", "echo")
	receiptPath := filepath.Join(dir, "receipt.json")
	res := cli(a, "", "run", "--json", "--engine", "fake", "--sign-key", host+".key", "--receipt", receiptPath, "--input", `{"a":1}`, p)
	require.Equal(t, exitOK, res.code, res.stderr)
	stored := filepath.Join(dir, "run.json")
	require.NoError(t, os.WriteFile(stored, []byte(res.stdout), 0o600))
	pub, err := receipt.ReadPublicKeyFile(host + ".pub")
	require.NoError(t, err)

	for _, rec := range []string{receiptPath, stored} {
		res = cli(a, "", "verify", "--key", host+".pub", "--record", rec, "--input", `{"a":1}`, p)
		require.Equal(t, exitOK, res.code, res.stderr)
		assert.Contains(t, res.stdout, "; signed by key "+pub.KeyID)
		res = cli(a, "", "verify", "--keys", dir, "--record", rec, "--input", `{"a":1}`, p)
		require.Equal(t, exitOK, res.code, res.stderr)

		res = cli(a, "", "verify", "--key", other+".pub", "--record", rec, "--input", `{"a":1}`, p)
		assert.Equal(t, exitFailure, res.code)
		assert.Contains(t, res.stderr, "which is not a trusted key")

		res = cli(a, "", "verify", "--record", rec, "--input", `{"a":1}`, p)
		require.Equal(t, exitOK, res.code, res.stderr)
		assert.Contains(t, res.stdout, "not checked (give --key or --keys)")
	}

	// A forged limit: consistent, but the signature no longer holds.
	forged := filepath.Join(dir, "forged.json")
	doc := strings.Replace(readFile(t, receiptPath), `"memoryBytes":`, `"memoryBytes":1`, 1)
	require.NoError(t, os.WriteFile(forged, []byte(doc), 0o600))
	res = cli(a, "", "verify", "--record", forged, "--input", `{"a":1}`, p)
	require.Equal(t, exitOK, res.code, "consistent: %s", res.stderr)
	res = cli(a, "", "verify", "--key", host+".pub", "--record", forged, "--input", `{"a":1}`, p)
	assert.Equal(t, exitFailure, res.code)
	assert.Contains(t, res.stderr, "sandbank: effect: record does not verify: the receipt's signature by key")

	// A retired key: stale for a run after its retirement.
	retired, err := receipt.MarshalPublicKey(receipt.TrustedKey{PublicKey: pub.PublicKey, Retired: time.Now().Add(-time.Hour)})
	require.NoError(t, err)
	retiredDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(retiredDir, "host.pub"), retired, 0o644))
	res = cli(a, "", "verify", "--keys", retiredDir, "--record", receiptPath, "--input", `{"a":1}`, p)
	assert.Equal(t, exitFailure, res.code)
	assert.Contains(t, res.stderr, "retired at")

	// Unsigned: verifies without a key and says so; refused with one.
	unsigned := filepath.Join(dir, "unsigned.json")
	res = cli(a, "", "run", "--engine", "fake", "--receipt", unsigned, "--input", `{"a":1}`, p)
	require.Equal(t, exitOK, res.code, res.stderr)
	res = cli(a, "", "verify", "--record", unsigned, "--input", `{"a":1}`, p)
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Contains(t, res.stdout, "unsigned: consistent, but nobody vouches for it")
	res = cli(a, "", "verify", "--key", host+".pub", "--record", unsigned, "--input", `{"a":1}`, p)
	assert.Equal(t, exitFailure, res.code)
	assert.Contains(t, res.stderr, "the receipt is not signed")

	res = cli(a, "", "verify", "--key", host+".key", "--record", receiptPath, "--input", `{"a":1}`, p)
	assert.Equal(t, exitUsage, res.code, "a private key is not a public key")
	res = cli(a, "", "verify", "--key", host+".pub", "--keys", dir, "--record", receiptPath, p)
	assert.Equal(t, exitUsage, res.code)
}

// run and serve refuse a private key file others may read, before any
// engine is built.
func TestSignKeyModeIsRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("file modes")
	}
	a, rec := fakeApp(t)
	name := filepath.Join(t.TempDir(), "host")
	require.Equal(t, exitOK, cli(a, "", "keygen", name).code)
	require.NoError(t, os.Chmod(name+".key", 0o644))
	p := script(t, "echo.js", "echo")
	res := cli(a, "", "run", "--engine", "fake", "--sign-key", name+".key", p)
	assert.Equal(t, exitUsage, res.code)
	assert.Contains(t, res.stderr, "more open than 0600")
	assert.Contains(t, res.stderr, "chmod 600")
	assert.Nil(t, rec.last, "no engine was built")

	res = cli(a, "", "run", "--engine", "fake", "--sign-key", filepath.Join(t.TempDir(), "none.key"), p)
	assert.Equal(t, exitUsage, res.code)

	// Port 99999 cannot be listened on: were the key accepted, serve
	// would fail (exit 1) instead of serving, never hang the test.
	res = cli(a, "", "serve", "--dev", "--addr", "127.0.0.1:99999", "--no-verify", "--sign-key", name+".key")
	assert.Equal(t, exitUsage, res.code)
	assert.Contains(t, res.stderr, "more open than 0600")
}

// serve --sign-key and --retired-keys give the server its signer and the
// retired keys it publishes; a retired key without a date is refused.
func TestServeSigning(t *testing.T) {
	a, _ := fakeApp(t)
	dir := t.TempDir()
	host := filepath.Join(dir, "host")
	require.Equal(t, exitOK, cli(a, "", "keygen", host).code)
	signer, err := receipt.ReadSignerFile(host + ".key")
	require.NoError(t, err)
	old, err := receipt.GenerateEd25519Signer()
	require.NoError(t, err)
	retiredDir := t.TempDir()
	when := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	b, err := receipt.MarshalPublicKey(receipt.TrustedKey{PublicKey: old.PublicKey(), Retired: when})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(retiredDir, "old.pub"), b, 0o644))

	opts := &server.Options{}
	require.NoError(t, serveSigning(&serveOptions{signKey: host + ".key", retiredKeys: retiredDir}, opts))
	reg, err := a.registry()
	require.NoError(t, err)
	srv, err := server.New(reg, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	keys := srv.Keys().Keys
	require.Len(t, keys, 2)
	assert.Equal(t, record.KeyIDOf(signer.PublicKey()), keys[0].KeyID)
	assert.Equal(t, record.KeyIDOf(old.PublicKey()), keys[1].KeyID)
	assert.Equal(t, when, keys[1].Retired)

	err = serveSigning(&serveOptions{retiredKeys: dir}, &server.Options{})
	var ee *exitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, exitUsage, ee.code)
	assert.ErrorContains(t, err, "has no Retired date")
}

// The receipt run --json prints carries the signature, as JSON.
func TestRunJSONReceiptIsSigned(t *testing.T) {
	a, _ := fakeApp(t)
	name := filepath.Join(t.TempDir(), "host")
	require.Equal(t, exitOK, cli(a, "", "keygen", name).code)
	res := cli(a, "", "run", "--json", "--engine", "fake", "--sign-key", name+".key", script(t, "t.js", "throw TypeError boom"))
	require.Equal(t, exitFailure, res.code, "a typed failure's receipt is signed too")
	var got struct {
		Receipt record.Receipt `json:"receipt"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &got), res.stdout)
	require.NotNil(t, got.Receipt.Signature)
	assert.Equal(t, record.SignatureEd25519, got.Receipt.Signature.Algorithm)
}

// verify refuses a record or receipt whose text reads two ways: a forged
// member that encoding/json would let the genuine, signed one override (a
// duplicate key, the same name in another case), or a name the format
// does not have. Every other JSON reader sees the forged "ok".
func TestVerifyRefusesTextThatReadsTwoWays(t *testing.T) {
	a, _ := fakeApp(t)
	dir := t.TempDir()
	host := filepath.Join(dir, "host")
	require.Equal(t, exitOK, cli(a, "", "keygen", host).code)
	p := script(t, "t.js", "throw TypeError boom")
	receiptPath := filepath.Join(dir, "receipt.json")
	res := cli(a, "", "run", "--json", "--engine", "fake", "--sign-key", host+".key", "--receipt", receiptPath, p)
	require.Equal(t, exitFailure, res.code, res.stderr)
	run := res.stdout
	for _, doc := range []string{readFile(t, receiptPath), run} {
		require.Contains(t, doc, `"outcome":"scriptError"`)
		for name, forged := range map[string]string{
			"a duplicate key":     strings.Replace(doc, `"outcome":"scriptError"`, `"outcome":"ok","outcome":"scriptError"`, 1),
			"a name in its case":  strings.Replace(doc, `"outcome":"scriptError"`, `"outcome":"ok","Outcome":"scriptError"`, 1),
			"a name of no format": strings.Replace(doc, `"outcome":"scriptError"`, `"outcome":"scriptError","verdict":"ok"`, 1),
		} {
			stored := filepath.Join(t.TempDir(), "forged.json")
			require.NoError(t, os.WriteFile(stored, []byte(forged), 0o600))
			res := cli(a, "", "verify", "--key", host+".pub", "--record", stored, p)
			assert.Equal(t, exitFailure, res.code, "%s: %s", name, res.stdout)
			assert.Contains(t, res.stderr, "sandbank: effect: record does not verify: its JSON text reads two ways", name)
		}
	}
	// Inside the record: its flattened failure, its value's place.
	for name, forged := range map[string]string{
		"the failure's message in its case": strings.Replace(run, `"message":"boom"`, `"message":"all fine","Message":"boom"`, 1),
		"a duplicate ok":                    strings.Replace(run, `"ok":false`, `"ok":true,"ok":false`, 1),
		"ok against the outcome":            strings.Replace(run, `"ok":false`, `"ok":true`, 1),
	} {
		require.NotEqual(t, run, forged, name)
		stored := filepath.Join(t.TempDir(), "forged.json")
		require.NoError(t, os.WriteFile(stored, []byte(forged), 0o600))
		res := cli(a, "", "verify", "--key", host+".pub", "--record", stored, p)
		assert.Equal(t, exitFailure, res.code, "%s: %s", name, res.stdout)
		assert.Contains(t, res.stderr, "reads two ways", name)
	}
	res = cli(a, "", "verify", "--key", host+".pub", "--record", receiptPath, p)
	require.Equal(t, exitOK, res.code, "the genuine receipt verifies: %s", res.stderr)
}
