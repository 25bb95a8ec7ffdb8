package typescript_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sandbank/sandbank/internal/runfiles/filestest"
	"github.com/sandbank/sandbank/spi"
)

// TestFiles: the wrapper passes the request's files to its JavaScript
// engine and declares files as that engine does; the global files is
// usable from typed code.
func TestFiles(t *testing.T) {
	typed := filestest.Case{Name: "typed", Script: `
const t: string = files.read("a.txt");
const b: Uint8Array = files.read("b.bin", "bytes");
files.write("n.txt", String(b.length) as string);
[t, files.list() as string[]]`,
		Want:  spi.OK(json.RawMessage(`["h\u00e9llo\n", ["a.txt", "b.bin", "c.txt"]]`)),
		Files: []spi.File{{Name: "n.txt", Data: []byte("256")}},
	}
	ran := 0
	for name, b := range engines(t) {
		if !b.Capabilities().Files {
			continue
		}
		ran++
		t.Run(name, func(t *testing.T) {
			filestest.Run(t, b, append([]filestest.Case{typed}, filestest.JavaScript...))
		})
	}
	assert.NotZero(t, ran, "an engine declares files")
}
