package starlarkwasm

import (
	"context"
	"testing"
	"time"

	"github.com/sandbank/sandbank/spi"
)

func TestSmoke(t *testing.T) {
	b, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	t0 := time.Now()
	if err := b.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Log("compile", time.Since(t0))
	for _, s := range []string{
		"def main(input):\n    return input",
		"def main(input):\n    return len([0] * 100000000)",
		"def main(input):\n    return len(\"x\" * 1000000000)",
		"def main(input):\n    for i in range(10000000):\n        pass\n    return 1",
		"def main(input):\n    fail('boom')",
		"def main(input):\n  return (",
	} {
		t0 := time.Now()
		b.observe = func(f facts) { t.Logf("%+v", f) }
		out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(s), Input: []byte(`{"a":[1,2.5,"é😀"]}`), Limits: spi.Limits{WallClock: time.Second, MemoryBytes: 32 << 20}})
		t.Logf("%v %+v %v", time.Since(t0), out, err)
	}
}
