package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/record"
)

// TestReadsADataDirWrittenBefore: testdata/datadir-v1 was written by the
// server before package storage existed (its openData, then
// effect.ReadOrCreateSignerFile, at commit 2632558), with a script, the
// receipts of runs 1 to 3 (testReceipt) and the leftover of a Put cut by a
// crash: every one of them reads back, and the leftover is removed.
func TestReadsADataDirWrittenBefore(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "datadir-v1"))))
	// Git keeps no file modes but the executable bit: the key is 0600 as
	// it was written.
	require.NoError(t, os.Chmod(SigningKeyFile(dir), 0o600))
	d, err := OpenData(&DataOptions{Dir: dir})
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()

	scripts, receipts, err := d.Tenant("dev")
	require.NoError(t, err)
	addr := record.AddressOf([]byte("input.n * 2"))
	require.Equal(t, record.Address("sha256:136793e91cdcd6199f4e0352295d10c72913b6df459fc24bec26de120db90abd"), addr)
	b, err := scripts.ReadScript(t.Context(), addr)
	require.NoError(t, err)
	assert.Equal(t, "input.n * 2", string(b))
	for i := 1; i <= 3; i++ {
		r, ok, err := receipts.Get(runID(i))
		require.NoError(t, err)
		require.True(t, ok, "run %d", i)
		assert.Equal(t, testReceipt(i), r)
	}
	assert.Zero(t, d.Damaged())
	assert.NoFileExists(t, filepath.Join(dir, "tenants", "dev", "scripts", "13", ".put-123"))

	// Appending goes on where the log was.
	require.NoError(t, receipts.Append(runID(4), testReceipt(4)))
	r, ok, err := receipts.Get(runID(4))
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, testReceipt(4), r)

	signer, err := receipt.ReadSignerFile(SigningKeyFile(dir))
	require.NoError(t, err)
	pub, err := os.ReadFile(filepath.Join(dir, "keys", "signing.pub"))
	require.NoError(t, err)
	key, err := receipt.ParsePublicKey(pub)
	require.NoError(t, err)
	assert.Equal(t, key.PublicKey, signer.PublicKey())
}

// TestDataOneOwner: a data directory open in this process is refused to a
// second OpenData, naming this process, and free again once closed; a
// closed Data refuses its tenants.
func TestDataOneOwner(t *testing.T) {
	dir := t.TempDir()
	first, err := OpenData(&DataOptions{Dir: dir})
	require.NoError(t, err)
	_, err = OpenData(&DataOptions{Dir: dir})
	require.ErrorIs(t, err, ErrDataDirInUse)
	assert.Contains(t, err.Error(), fmt.Sprintf("process %d holds %s", os.Getpid(), dir))
	require.NoError(t, first.Close())
	_, _, err = first.Tenant("dev")
	require.Error(t, err)
	again, err := OpenData(&DataOptions{Dir: dir})
	require.NoError(t, err)
	require.NoError(t, again.Close())
	require.NoError(t, again.Close(), "closing again does nothing")
}

// TestDataRefusesNegativeBounds: every bound of DataOptions is checked
// when the data is opened.
func TestDataRefusesNegativeBounds(t *testing.T) {
	for name, o := range map[string]DataOptions{
		"StoreBytes": {StoreBytes: -1}, "StoreEntries": {StoreEntries: -1},
		"ReceiptSegmentBytes": {ReceiptSegmentBytes: -1}, "ReceiptSegments": {ReceiptSegments: -1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := OpenData(&o)
			requireInvalid(t, err, effect.ErrInvalidLimits)
		})
	}
}
