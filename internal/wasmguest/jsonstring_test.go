package wasmguest

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

// jsonStringCases are strings whose literal takes every branch of
// appendJSONString.
var jsonStringCases = []string{
	"", "input", `say "hi" \ back`, "\b\f\n\r\t\x00\x1f\x7f", "<script>&amp;</script>",
	"é ✓ 😀", "\u2028\u2029", "bad \xff\xfe utf-8 \xe2\x82", "\xed\xa0\x80 surrogate", "tail\xc3",
}

// TestAppendJSONStringMatchesEncodingJSON: the payload's script line is
// byte for byte what encoding/json writes.
func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range jsonStringCases {
		want, err := json.Marshal(s)
		assert.NoError(t, err)
		assert.Equal(t, string(want), string(appendJSONString(nil, []byte(s))), "%q", s)
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStringCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		want, err := json.Marshal(string(s))
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	})
}

// BenchmarkSizedPayload is the payload of a parked echo run, built on
// the calling goroutine ("warm") and on a new goroutine per run, as the
// effect calls a backend ("new-goroutine": its stack starts small).
func BenchmarkSizedPayload(b *testing.B) {
	n := Nonce("0123456789abcdef0123456789abcdef")
	script, input := []byte("input"), []byte(`{"a":1,"b":"x"}`)
	b.Run("warm", func(b *testing.B) {
		for b.Loop() {
			_ = SizedPayload(n, script, input, false)
		}
	})
	b.Run("new-goroutine", func(b *testing.B) {
		done := make(chan []byte)
		for b.Loop() {
			go func() { done <- SizedPayload(n, script, input, false) }()
			<-done
		}
	})
}
