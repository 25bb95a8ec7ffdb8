package mcpserver

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// TestFilesContentByContentNotName: an output file is an image by its
// bytes: a PNG, JPEG, GIF or WebP of any name is image content; a text
// named .png is a text resource; other bytes are a blob resource.
func TestFilesContentByContentNotName(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	jpeg := []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00")
	gif := []byte("GIF89a\x01\x00\x01\x00")
	webp := []byte("RIFF\x10\x00\x00\x00WEBPVP8 ")
	items := filesContent([]spi.File{
		{Name: "a", Data: png}, {Name: "b.txt", Data: jpeg}, {Name: "c", Data: gif}, {Name: "d", Data: webp},
		{Name: "fake.png", Data: []byte("just text\n")}, {Name: "z.bin", Data: []byte{0, 1, 2, 0xff}},
	})
	require.Len(t, items, 7)
	text, ok := items[0].(*mcp.TextContent)
	require.True(t, ok)
	assert.Contains(t, text.Text, "6 output files")
	for i, want := range []string{"image/png", "image/jpeg", "image/gif", "image/webp"} {
		img, ok := items[1+i].(*mcp.ImageContent)
		require.True(t, ok, "%d: %T", i, items[1+i])
		assert.Equal(t, want, img.MIMEType)
	}
	res, ok := items[5].(*mcp.EmbeddedResource)
	require.True(t, ok, "%T", items[5])
	assert.Equal(t, "just text\n", res.Resource.Text)
	assert.Equal(t, "sandbank:files/fake.png", res.Resource.URI)
	res, ok = items[6].(*mcp.EmbeddedResource)
	require.True(t, ok, "%T", items[6])
	assert.Equal(t, []byte{0, 1, 2, 0xff}, res.Resource.Blob)
	assert.Empty(t, res.Resource.Text)
	assert.Nil(t, filesContent(nil))
}
