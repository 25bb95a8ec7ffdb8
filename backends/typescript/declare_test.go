package typescript_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/typescript"
	"github.com/sandbank/sandbank/internal/fakebackend"
)

// TestDeclareIsWhatWrapReports: Declare of a JavaScript declaration is the
// Capabilities of the wrapper around a backend that declares it.
func TestDeclareIsWhatWrapReports(t *testing.T) {
	js := fakebackend.Capabilities()
	js.Language = "javascript"
	b, err := typescript.Wrap(fakebackend.New(js, nil), nil)
	require.NoError(t, err)
	defer func() { assert.NoError(t, b.Close()) }()
	caps := typescript.Declare(js)
	assert.Equal(t, b.Capabilities(), caps)
	assert.Equal(t, typescript.Language, caps.Language)
	js.Language = typescript.Language
	assert.Equal(t, js, caps, "only the language changes")
}
