package typescript

import (
	"context"
	"strings"
	"testing"

	"github.com/sandbank/sandbank/spi"
)

// FuzzNesting builds a script of up to 600 KB by repeating a fragment
// between a prefix and a suffix, and strips its types: nesting shapes
// (prefix operators, arrows, member chains, templates, generics) are what
// overflowed esbuild's Go stack, a fatal error no recover catches, which
// the fuzzer reports as a crash. A refused script must be a typed
// SyntaxError.
func FuzzNesting(f *testing.F) {
	for _, seed := range []struct {
		prefix, fragment, suffix string
		count                    uint32
	}{
		{"", "!", "1", 600000},
		{"", "a=>", "1", 200000},
		{"x=", "<T>()=>", "1", 200000},
		{"a", ".a", "", 300000},
		{"a", "`,`", "", 200000},
		{"", "`${", "1", 200000},
		{"let x: ", "A<", "B", 300000},
		{"", "typeof ", "1", 100000},
		{"enum E { a0 = 'xx'", ", a = a + a", " }", 30},
		{"const x: number = ", "1 + ", "1", 1000},
	} {
		f.Add(seed.prefix, seed.fragment, seed.suffix, seed.count)
	}
	var in inner
	b, err := Wrap(&in, &Options{CacheEntries: -1})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, prefix, fragment, suffix string, count uint32) {
		const maxBytes = 600 << 10
		if len(prefix)+len(suffix) > 1024 || len(fragment) == 0 || len(fragment) > 64 {
			t.Skip()
		}
		n := min(int(count), (maxBytes-len(prefix)-len(suffix))/len(fragment))
		script := prefix + strings.Repeat(fragment, n) + suffix
		js, failure, err := b.javascript(context.Background(), []byte(script), 0)
		if err != nil {
			t.Fatalf("an error without a context: %v", err)
		}
		if failure != nil {
			if failure.Kind != spi.KindThrew || failure.Name != "SyntaxError" {
				t.Fatalf("a refusal that is not a SyntaxError: %+v", failure)
			}
			return
		}
		if js == nil {
			t.Fatal("neither JavaScript nor a refusal")
		}
	})
}
