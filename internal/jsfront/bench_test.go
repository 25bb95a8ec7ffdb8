package jsfront

import (
	"os"
	"testing"
)

// BenchmarkPrepare measures what the front end adds to a run: nothing but
// a substring search for a script without "await", one parse for a script
// that awaits only inside functions, two parses (the reading and the
// check) for a script with top-level await.
func BenchmarkPrepare(b *testing.B) {
	reshape, err := os.ReadFile("../../bench/workloads/reshape.js")
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		src  []byte
	}{
		{"classic/reshape", reshape},
		{"await-in-function/reshape", append([]byte("async function f() { await 1 }\n"), reshape...)},
		{"top-level-await/reshape", append([]byte("await 1\n"), reshape...)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.src)))
			for b.Loop() {
				Prepare(bc.src)
			}
		})
	}
}
