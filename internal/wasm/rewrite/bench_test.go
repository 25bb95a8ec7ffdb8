package rewrite

import (
	"testing"

	quickjswasi "github.com/paralin/go-quickjs-wasi"
)

// BenchmarkRewriteQuickJS measures the once-per-process rewrite of the
// QuickJS binary.
func BenchmarkRewriteQuickJS(b *testing.B) {
	b.SetBytes(int64(len(quickjswasi.QuickJSWASM)))
	for range b.N {
		if _, err := Rewrite(quickjswasi.QuickJSWASM); err != nil {
			b.Fatal(err)
		}
	}
}
