package cache

import (
	"runtime/debug"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A build names a dependency with a sum, and its own module only at the
// revision of an unmodified tree.
func TestModuleIDs(t *testing.T) {
	bi := &debug.BuildInfo{
		Main: debug.Module{Path: "example.com/main", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "example.com/dep", Version: "v1.2.3", Sum: "h1:abc="},
			{Path: "example.com/replaced", Version: "v1.0.0", Sum: "h1:old=", Replace: &debug.Module{Path: "example.com/fork", Version: "v1.0.1", Sum: "h1:new="}},
			{Path: "example.com/local", Version: "v1.0.0", Sum: "h1:x=", Replace: &debug.Module{Path: "../local"}},
		},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "false"}},
	}
	assert.Equal(t, map[string]string{
		"example.com/dep":      "module example.com/dep@v1.2.3 h1:abc=",
		"example.com/replaced": "module example.com/replaced@v1.0.1 h1:new=",
		"example.com/main":     "revision example.com/main 0123abcd",
	}, moduleIDs(bi), "a replacement without a sum (a local directory) is hashed")

	bi.Settings[1].Value = "true"
	assert.NotContains(t, moduleIDs(bi), "example.com/main", "a modified tree is hashed")
	bi.Settings = nil
	assert.NotContains(t, moduleIDs(bi), "example.com/main", "a build without version control stamps is hashed")
}

// Only the embedded slice itself is named; bytes put in its place, or a
// module the build cannot name, are hashed.
func TestEmbeddedInput(t *testing.T) {
	ids := map[string]string{"example.com/dep": "module example.com/dep@v1.2.3 h1:abc="}
	embedded := []byte("the bytes a module ships")

	named := embeddedInput(embedded, embedded, "example.com/dep", ids)
	assert.Equal(t, ids["example.com/dep"], string(named))
	assert.NotEqual(t, Key("m", embedded), Key("m", named))

	same := slices.Clone(embedded) // equal bytes, not the embedded slice
	assert.Equal(t, same, embeddedInput(same, embedded, "example.com/dep", ids), "a replacement is hashed")
	assert.Equal(t, embedded[:3], embeddedInput(embedded[:3], embedded, "example.com/dep", ids), "a part is hashed")
	assert.Equal(t, embedded, embeddedInput(embedded, embedded, "example.com/other", ids))

	// A test binary records no dependencies: everything is hashed.
	assert.Equal(t, embedded, EmbeddedInput(embedded, embedded, "github.com/tetratelabs/wazero"))
}
