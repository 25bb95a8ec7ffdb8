package guest

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWriteRecordRoundTrip: what WriteRecord writes, Stdout reads back,
// astral characters included (a body whose length were counted in bytes
// or in runes would be refused).
func TestWriteRecordRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		kind byte
		body string
		want Record
	}{
		{RecResult, `{"a":"é😀x"}`, Record{Kind: RecResult, Body: []byte(`{"a":"é😀x"}`)}},
		{RecThrew, `["fail","😀😀"]`, Record{Kind: RecThrew, Body: []byte(`["fail","😀😀"]`)}},
		{RecCPU, "ignored", Record{Kind: RecCPU}},
		{RecMemory, "", Record{Kind: RecMemory}},
	} {
		var guest bytes.Buffer
		require.NoError(t, WriteRecord(&guest, testNonce, RecStart, nil))
		require.NoError(t, WriteRecord(&guest, testNonce, tc.kind, []byte(tc.body)))
		s := NewStdout(testNonce, 1<<20, nil)
		_, _ = s.Write(guest.Bytes())
		assert.True(t, s.Started())
		assert.Equal(t, tc.want, s.Record(), string(tc.kind))
	}
}

// TestWriteRecordOtherNonce: a record written with another nonce is not
// read.
func TestWriteRecordOtherNonce(t *testing.T) {
	var guest bytes.Buffer
	require.NoError(t, WriteRecord(&guest, "ffffffffffffffffffffffffffffffff", RecResult, []byte(`1`)))
	s := NewStdout(testNonce, 1<<20, nil)
	_, _ = s.Write(guest.Bytes())
	assert.Equal(t, Record{}, s.Record())
}
