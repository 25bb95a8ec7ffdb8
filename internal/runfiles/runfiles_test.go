package runfiles_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/runfiles"
	"github.com/sandbank/sandbank/spi"
)

func request(maxFiles int, maxBytes int64, in ...spi.File) spi.Request {
	return spi.Request{Files: in, Limits: spi.Limits{MaxOutFiles: maxFiles, MaxOutFileBytes: maxBytes}}
}

func TestReadAndList(t *testing.T) {
	s := runfiles.New(request(1, 1, spi.File{Name: "b.bin", Data: []byte{0, 1}}, spi.File{Name: "a.txt", Data: []byte("hi")}))
	assert.Equal(t, []string{"a.txt", "b.bin"}, s.List())
	b, err := s.Read("a.txt")
	require.NoError(t, err)
	assert.Equal(t, "hi", string(b))
	_, err = s.Read("c.txt")
	assert.ErrorIs(t, err, runfiles.ErrNoFile)
	_, err = s.Read("../a.txt")
	assert.ErrorIs(t, err, spi.ErrFileName)
	assert.Empty(t, runfiles.New(spi.Request{}).List())
}

func TestWriteReplacesAndSorts(t *testing.T) {
	s := runfiles.New(request(2, 6))
	data := []byte("xyz")
	require.NoError(t, s.Write("z.txt", data))
	data[0] = 'Q' // the set holds a copy
	require.NoError(t, s.Write("a.txt", []byte("abc")))
	// Replacing frees the old bytes: 3 + 3 is within 6, and so is 3 + 2.
	require.NoError(t, s.Write("a.txt", []byte("ab")))
	require.NoError(t, s.Write("z.txt", []byte("wxyz")))
	assert.Equal(t, []spi.File{{Name: "a.txt", Data: []byte("ab")}, {Name: "z.txt", Data: []byte("wxyz")}}, s.Files())
	assert.False(t, s.Exceeded())
}

func TestWriteBadNameWritesNothing(t *testing.T) {
	s := runfiles.New(request(2, 6))
	for _, name := range []string{"../x", "/etc/passwd", "a\x00b", "", ".hidden", "a/b"} {
		assert.ErrorIs(t, s.Write(name, []byte("x")), spi.ErrFileName, name)
	}
	assert.Nil(t, s.Files())
	assert.False(t, s.Exceeded())
}

func TestWritePastBounds(t *testing.T) {
	t.Run("count", func(t *testing.T) {
		s := runfiles.New(request(2, 100))
		require.NoError(t, s.Write("f0", []byte("x")))
		require.NoError(t, s.Write("f1", []byte("x")))
		assert.ErrorIs(t, s.Write("f2", []byte("x")), runfiles.ErrLimit)
		assert.True(t, s.Exceeded())
		// Once past, every write fails, even one within the bounds.
		assert.ErrorIs(t, s.Write("f0", []byte("y")), runfiles.ErrLimit)
		assert.Equal(t, spi.Limited(spi.LimitFiles), s.Conclude(spi.OK([]byte("true"))))
	})
	t.Run("bytes", func(t *testing.T) {
		s := runfiles.New(request(10, 4))
		require.NoError(t, s.Write("f0", []byte("xx")))
		filled := false
		err := s.WriteFunc("f1", 3, func([]byte) { filled = true })
		assert.ErrorIs(t, err, runfiles.ErrLimit)
		assert.False(t, filled, "the bytes are never copied past the bound")
		assert.Equal(t, spi.Limited(spi.LimitFiles), s.Conclude(spi.Threw("Error", "caught and rethrown")))
	})
	t.Run("zero", func(t *testing.T) {
		s := runfiles.New(request(0, 0))
		assert.ErrorIs(t, s.Write("f0", nil), runfiles.ErrLimit)
	})
}

func TestConclude(t *testing.T) {
	s := runfiles.New(request(1, 10))
	require.NoError(t, s.Write("out.txt", []byte("hello")))
	ok := s.Conclude(spi.OK([]byte("true")))
	assert.Equal(t, []spi.File{{Name: "out.txt", Data: []byte("hello")}}, ok.Files)
	// The output files of a run that does not end OK are dropped.
	assert.Nil(t, s.Conclude(spi.Threw("Error", "x")).Files)
	assert.Equal(t, spi.Limited(spi.LimitWallClock), s.Conclude(spi.Limited(spi.LimitWallClock)))
	var none *runfiles.Set
	assert.Equal(t, spi.OK([]byte("1")), none.Conclude(spi.OK([]byte("1"))))
}
