//go:build unix

package storage

import (
	"os"
	"syscall"
	"testing"

	"github.com/sandbank/sandbank/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDirStoreRefusesAFIFO(t *testing.T) {
	dir := t.TempDir()
	s, err := NewDirStore(dir, nil)
	require.NoError(t, err)
	addr := record.AddressOf(testScript)
	require.NoError(t, syscall.Mkfifo(scriptPath(t, dir, addr), 0o600))
	err = readWithin(t, s, addr)
	assert.EqualError(t, err, "storage: dir store: stored script is not a regular file")

	// Put replaces it.
	_, err = s.Put(testScript)
	require.NoError(t, err)
	got, err := s.ReadScript(t.Context(), addr)
	require.NoError(t, err)
	assert.Equal(t, testScript, got)
}

func TestDirStoreRefusesASymlinkToDevZero(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero here")
	}
	dir := t.TempDir()
	s, err := NewDirStore(dir, nil)
	require.NoError(t, err)
	addr := record.AddressOf(testScript)
	require.NoError(t, os.Symlink("/dev/zero", scriptPath(t, dir, addr)))
	err = readWithin(t, s, addr)
	assert.EqualError(t, err, "storage: dir store: stored script is not a regular file")
}

func TestDirStoreRefusesASymlinkToARegularFile(t *testing.T) {
	// Even a link to a file holding the right bytes: the store writes
	// regular files only, so a link is tampering.
	dir := t.TempDir()
	s, err := NewDirStore(dir, nil)
	require.NoError(t, err)
	addr := record.AddressOf(testScript)
	target := dir + "/elsewhere"
	require.NoError(t, os.WriteFile(target, testScript, 0o600))
	require.NoError(t, os.Symlink(target, scriptPath(t, dir, addr)))
	err = readWithin(t, s, addr)
	assert.EqualError(t, err, "storage: dir store: stored script is not a regular file")
}
