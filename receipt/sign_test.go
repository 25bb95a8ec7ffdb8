package receipt

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/canon"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// testSigner returns a fresh in-memory signer.
func testSigner(t testing.TB) *Ed25519Signer {
	t.Helper()
	s, err := GenerateEd25519Signer()
	require.NoError(t, err)
	return s
}

// signedRun runs the ok script through an effect that signs with s.
func signedRun(t testing.TB, s record.Signer) verifyRun {
	t.Helper()
	f := newFixture(t, okOutcomeBehavior(`{"b":1,"a":[1,2]}`), &effect.Options{Engine: "fake", Signer: s})
	input := json.RawMessage(`{"n":1}`)
	rec, err := f.e.Run(context.Background(), effect.Call{Script: f.addr, Input: input})
	require.NoError(t, err)
	return verifyRun{name: "ok", rec: rec, script: testScript, input: input}
}

func okOutcomeBehavior(v string) fakebackend.Behavior { return fakebackend.Return(okOutcome(v)) }

// copyRecord returns a copy of rec whose receipt, signature and failure
// can be changed without changing rec.
func copyRecord(rec *effect.Record) *effect.Record {
	c := *rec
	if rec.Failure != nil {
		f := *rec.Failure
		c.Failure = &f
	}
	if rec.Receipt.Signature != nil {
		s := *rec.Receipt.Signature
		s.Value = append([]byte(nil), s.Value...)
		c.Receipt.Signature = &s
	}
	return &c
}

// The effect signs every record's receipt with effect.Options.Signer; the
// signature names the key and verifies with it, for every outcome kind.
func TestRunSignsTheReceipt(t *testing.T) {
	s := testSigner(t)
	run := signedRun(t, s)
	sig := run.rec.Receipt.Signature
	require.NotNil(t, sig)
	assert.Equal(t, record.SignatureEd25519, sig.Algorithm)
	assert.Equal(t, record.KeyIDOf(s.PublicKey()), sig.KeyID)
	assert.Len(t, sig.Value, ed25519.SignatureSize)
	require.NoError(t, Verify(run.rec, run.script, run.input, WithKey(s.PublicKey()), RequireSignature()))

	// Stored as JSON and read back, it still verifies.
	b, err := json.Marshal(run.rec)
	require.NoError(t, err)
	var back effect.Record
	require.NoError(t, json.Unmarshal(b, &back))
	require.NoError(t, Verify(&back, run.script, run.input, WithKey(s.PublicKey()), RequireSignature()))
	require.NoError(t, VerifyReceipt(back.Receipt, run.script, run.input, WithKey(s.PublicKey()), RequireSignature()))

	// Every outcome kind: the same signing step, the same check.
	for name, r := range realRunsSignedBy(t, s) {
		require.NotNil(t, r.rec.Receipt.Signature, name)
		assert.NoError(t, Verify(r.rec, r.script, r.input, WithKey(s.PublicKey()), RequireSignature()), name)
	}
}

// A forged receipt fails Verify with the key, one test per field: each
// forgery but the signature's own is consistent (it verifies without a
// key), so only the signature catches it.
func TestVerifyRefusesForgedSignedReceipts(t *testing.T) {
	s := testSigner(t)
	other := testSigner(t)
	keys, err := NewKeySet(TrustedKey{PublicKey: s.PublicKey()}, TrustedKey{PublicKey: other.PublicKey()})
	require.NoError(t, err)
	run := signedRun(t, s)
	otherSC := resigner{other}
	attacker := testSigner(t)
	attackerSC := resigner{attacker}

	tests := []struct {
		name       string
		forge      func(t *testing.T, r *effect.Record)
		want       error
		consistent bool // Verify without a key passes: only the signature catches it
	}{
		{"value changed and digest recomputed", func(t *testing.T, r *effect.Record) {
			r.Value = json.RawMessage(`{"a":[1,2],"b":2}`)
			r.Receipt.OutputDigest = canon.Digest(r.Value)
		}, ErrBadSignature, true},
		{"outcome changed", func(t *testing.T, r *effect.Record) {
			r.Value = nil
			r.Failure = &effect.Failure{Code: record.CodeScriptError, Name: "Error", Message: "made up"}
			r.Receipt.Outcome = "scriptError"
			d, err := canon.DigestJSON(r.Failure)
			require.NoError(t, err)
			r.Receipt.OutputDigest = d
		}, ErrBadSignature, true},
		{"limits changed", func(t *testing.T, r *effect.Record) { r.Receipt.Limits.MemoryBytes *= 2 }, ErrBadSignature, true},
		{"wall clock changed", func(t *testing.T, r *effect.Record) { r.Receipt.Limits.WallClock = time.Hour }, ErrBadSignature, true},
		{"capabilities changed", func(t *testing.T, r *effect.Record) { r.Receipt.Capabilities.Network = spi.NetworkOpen }, ErrBadSignature, true},
		{"engine changed", func(t *testing.T, r *effect.Record) { r.Receipt.Engine = "quickjs" }, ErrBadSignature, true},
		{"start changed", func(t *testing.T, r *effect.Record) { r.Receipt.Started = r.Receipt.Started.Add(-time.Hour) }, ErrBadSignature, true},
		{"algorithm changed", func(t *testing.T, r *effect.Record) { r.Receipt.Signature.Algorithm = "rsa" }, ErrBadSignature, true},
		{"key swapped: re-signed by an untrusted key", func(t *testing.T, r *effect.Record) {
			r.Receipt.Limits.MemoryBytes *= 2
			require.NoError(t, attackerSC.sign(context.Background(), &r.Receipt))
		}, ErrUnknownKey, true},
		{"key id swapped for another trusted key's", func(t *testing.T, r *effect.Record) {
			r.Receipt.Signature.KeyID = record.KeyIDOf(other.PublicKey())
		}, ErrBadSignature, true},
		{"signature of another trusted key over another receipt", func(t *testing.T, r *effect.Record) {
			forged := r.Receipt
			forged.Engine = "other"
			require.NoError(t, otherSC.sign(context.Background(), &forged))
			r.Receipt.Signature = forged.Signature
		}, ErrBadSignature, true},
		{"signature truncated", func(t *testing.T, r *effect.Record) {
			r.Receipt.Signature.Value = r.Receipt.Signature.Value[:32]
		}, ErrBadSignature, true},
		{"signature bit flipped", func(t *testing.T, r *effect.Record) { r.Receipt.Signature.Value[0] ^= 1 }, ErrBadSignature, true},
		{"signature removed", func(t *testing.T, r *effect.Record) { r.Receipt.Signature = nil }, ErrUnsigned, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := copyRecord(run.rec)
			tt.forge(t, rec)
			if tt.consistent {
				require.NoError(t, Verify(rec, run.script, run.input), "the forgery is consistent")
			}
			err := Verify(rec, run.script, run.input, WithKeys(keys), RequireSignature())
			require.ErrorIs(t, err, tt.want)
			require.ErrorIs(t, err, ErrRecordMismatch)
			var se *SignatureError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tt.want, se.Reason)
			err = VerifyReceipt(rec.Receipt, run.script, run.input, WithKeys(keys), RequireSignature())
			require.ErrorIs(t, err, tt.want, "the receipt alone")
		})
	}
}

// A key retired before the run started is stale; one retired after it is
// not; a key nobody trusts is unknown.
func TestVerifyKeyRetirement(t *testing.T) {
	s := testSigner(t)
	run := signedRun(t, s)
	started := run.rec.Receipt.Started
	set := func(retired time.Time) *KeySet {
		ks, err := NewKeySet(TrustedKey{PublicKey: s.PublicKey(), Retired: retired})
		require.NoError(t, err)
		return ks
	}
	require.NoError(t, Verify(run.rec, run.script, run.input, WithKeys(set(started.Add(time.Second)))))
	err := Verify(run.rec, run.script, run.input, WithKeys(set(started)))
	require.ErrorIs(t, err, ErrStaleKey)
	err = Verify(run.rec, run.script, run.input, WithKeys(set(started.Add(-time.Hour))))
	require.ErrorIs(t, err, ErrStaleKey)
	assert.ErrorContains(t, err, "retired at")

	err = Verify(run.rec, run.script, run.input, WithKey(testSigner(t).PublicKey()))
	require.ErrorIs(t, err, ErrUnknownKey)
	err = Verify(run.rec, run.script, run.input, RequireSignature())
	require.ErrorIs(t, err, ErrUnknownKey, "a signature with no trusted keys proves nothing")
}

// An unsigned receipt verifies for consistency, with or without keys,
// unless a signature is required.
func TestVerifyUnsignedReceipt(t *testing.T) {
	run := realRuns(t)["ok"]
	require.Nil(t, run.rec.Receipt.Signature)
	pub := testSigner(t).PublicKey()
	require.NoError(t, Verify(run.rec, run.script, run.input))
	require.NoError(t, Verify(run.rec, run.script, run.input, WithKey(pub)))
	err := Verify(run.rec, run.script, run.input, WithKey(pub), RequireSignature())
	require.ErrorIs(t, err, ErrUnsigned)
	require.ErrorIs(t, err, ErrRecordMismatch)
	assert.EqualError(t, err, "effect: record does not verify: the receipt is not signed")
	// An unsigned receipt's JSON has no signature member: receipts from
	// before signing are unchanged.
	b, err := run.rec.Receipt.Canonical()
	require.NoError(t, err)
	assert.NotContains(t, string(b), "signature")

	err = Verify(run.rec, run.script, run.input, WithKey(ed25519.PublicKey("short")))
	require.ErrorIs(t, err, effect.ErrInvalidKey)
	require.ErrorIs(t, err, effect.ErrInvalidCall)
}

// brokenSigner fails, or has a public key that is not one.
type brokenSigner struct {
	pub ed25519.PublicKey
	err error
}

func (b brokenSigner) PublicKey() ed25519.PublicKey { return b.pub }
func (b brokenSigner) Sign(context.Context, []byte) ([]byte, error) {
	return nil, b.err
}

// A signer that fails makes the run infrastructure, with its record
// unsigned; a signer whose key is not an Ed25519 key is refused by New.
func TestSignerFailures(t *testing.T) {
	pub := testSigner(t).PublicKey()
	f := newFixture(t, okOutcomeBehavior(`1`), &effect.Options{Signer: brokenSigner{pub: pub, err: errors.New("kms down")}})
	rec, err := f.e.Run(context.Background(), effect.Call{Script: f.addr, Input: 1})
	require.Error(t, err)
	assert.Equal(t, effect.KindInfrastructure, effect.KindOf(err))
	assert.ErrorContains(t, err, "effect: signing the receipt: kms down")
	require.NotNil(t, rec)
	assert.Nil(t, rec.Receipt.Signature)

	_, err = effect.New(new(storage.MemoryStore), fakebackend.New(fakebackend.Capabilities(), okOutcomeBehavior(`1`)),
		&effect.Options{Signer: brokenSigner{pub: pub[:5]}})
	require.ErrorIs(t, err, effect.ErrInvalidKey)
}

// Key files: written and read back; a private key file others may read
// is refused; a key directory reads retirement dates.
func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	s := testSigner(t)
	priv, pub := filepath.Join(dir, "host.key"), filepath.Join(dir, "host.pub")
	require.NoError(t, WriteKeyFiles(s, priv, pub))
	fi, err := os.Stat(priv)
	require.NoError(t, err)
	if runtime.GOOS != "windows" {
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	}
	back, err := ReadSignerFile(priv)
	require.NoError(t, err)
	assert.Equal(t, s.PublicKey(), back.PublicKey())
	k, err := ReadPublicKeyFile(pub)
	require.NoError(t, err)
	assert.Equal(t, s.PublicKey(), k.PublicKey)
	assert.Equal(t, record.KeyIDOf(s.PublicKey()), k.KeyID)
	require.Error(t, WriteKeyFiles(s, priv, pub), "an existing key file is never overwritten")

	if runtime.GOOS != "windows" {
		require.NoError(t, os.Chmod(priv, 0o640))
		_, err = ReadSignerFile(priv)
		require.ErrorIs(t, err, ErrKeyFileMode)
		require.ErrorIs(t, err, effect.ErrInvalidKey)
	}
	_, err = ReadSignerFile(pub)
	require.ErrorIs(t, err, effect.ErrInvalidKey, "a public key file is not a private key")

	retired := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	old := testSigner(t)
	b, err := MarshalPublicKey(TrustedKey{PublicKey: old.PublicKey(), Retired: retired})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "old.pub"), b, 0o644))
	ks, err := ReadKeyDir(dir)
	require.NoError(t, err)
	got := map[string]time.Time{}
	for _, k := range ks.Keys() {
		got[k.KeyID] = k.Retired
	}
	assert.Equal(t, map[string]time.Time{record.KeyIDOf(s.PublicKey()): {}, record.KeyIDOf(old.PublicKey()): retired}, got)

	_, err = ReadKeyDir(t.TempDir())
	require.ErrorIs(t, err, effect.ErrInvalidKey, "an empty key directory")

	// ReadKeys: a directory, one public key file, or the published JSON.
	for _, path := range []string{dir, pub} {
		ks, err := ReadKeys(path)
		require.NoError(t, err, path)
		assert.NotEmpty(t, ks.Keys())
	}
	doc, err := json.Marshal(PublishedKeys{Keys: ks.Keys()})
	require.NoError(t, err)
	docPath := filepath.Join(t.TempDir(), "keys.json")
	require.NoError(t, os.WriteFile(docPath, doc, 0o644))
	fromDoc, err := ReadKeys(docPath)
	require.NoError(t, err)
	assert.Equal(t, ks.Keys(), fromDoc.Keys())
	require.NoError(t, os.WriteFile(docPath, []byte(`{"keys":[{"publicKey":"AAAA"}]}`), 0o644))
	_, err = ReadKeys(docPath)
	require.ErrorIs(t, err, effect.ErrInvalidKey)
}

// NewKeySet refuses what is not a trusted key.
func TestNewKeySetRefuses(t *testing.T) {
	pub := testSigner(t).PublicKey()
	for name, k := range map[string][]TrustedKey{
		"short key":       {{PublicKey: pub[:4]}},
		"wrong key id":    {{PublicKey: pub, KeyID: "00"}},
		"wrong algorithm": {{PublicKey: pub, Algorithm: "rsa"}},
		"listed twice":    {{PublicKey: pub}, {PublicKey: pub}},
	} {
		_, err := NewKeySet(k...)
		require.ErrorIs(t, err, effect.ErrInvalidKey, name)
	}
	// The published form round-trips through JSON.
	ks, err := NewKeySet(TrustedKey{PublicKey: pub, Retired: time.Unix(0, 0).UTC()})
	require.NoError(t, err)
	b, err := json.Marshal(ks.Keys())
	require.NoError(t, err)
	var back []TrustedKey
	require.NoError(t, json.Unmarshal(b, &back))
	_, err = NewKeySet(back...)
	require.NoError(t, err)
	assert.Equal(t, ks.Keys(), back)
}

// ReadOrCreateSignerFile creates one key, whole, even when processes race
// for it, and reads it back afterwards.
func TestReadOrCreateSignerFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys", "signing.key")
	const n = 8
	type result struct {
		s       *Ed25519Signer
		created bool
		err     error
	}
	results := make(chan result, n)
	for range n {
		go func() {
			s, created, err := ReadOrCreateSignerFile(path)
			results <- result{s, created, err}
		}()
	}
	var first ed25519.PublicKey
	creators := 0
	for range n {
		r := <-results
		require.NoError(t, r.err)
		if r.created {
			creators++
		}
		if first == nil {
			first = r.s.PublicKey()
		}
		assert.Equal(t, first, r.s.PublicKey(), "one key for all")
	}
	assert.Equal(t, 1, creators)
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	}
	pub, err := ReadPublicKeyFile(filepath.Join(filepath.Dir(path), "signing.pub"))
	require.NoError(t, err)
	assert.Equal(t, first, pub.PublicKey)
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no temporary file is left")

	s, created, err := ReadOrCreateSignerFile(path)
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, first, s.PublicKey())
}
