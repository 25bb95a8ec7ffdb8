package jsonstr_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sandbank/sandbank/internal/jsonstr"
)

// cases are strings whose literal takes every branch of Append.
var cases = []string{
	"", "input", `say "hi" \ back`, "\b\f\n\r\t\x00\x1f\x7f", "<script>&amp;</script>",
	"é ✓ 😀", "\u2028\u2029", "bad \xff\xfe utf-8 \xe2\x82", "\xed\xa0\x80 surrogate", "tail\xc3",
}

// encodingJSON is what encoding/json writes for s with HTML escaping off.
func encodingJSON(t testing.TB, s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// TestAppendMatchesEncodingJSON: Append writes byte for byte what
// encoding/json writes.
func TestAppendMatchesEncodingJSON(t *testing.T) {
	for _, s := range cases {
		assert.Equal(t, encodingJSON(t, s), string(jsonstr.Append(nil, []byte(s))), "%q", s)
	}
}

func FuzzAppend(f *testing.F) {
	for _, s := range cases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		want := encodingJSON(t, string(s))
		if got := jsonstr.Append([]byte("x"), s); string(got) != "x"+want {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	})
}

// Append writes a literal after what the destination holds.
func ExampleAppend() {
	line := []byte(`{"script":`)
	line = jsonstr.Append(line, []byte("say \"<hi>\"\n"))
	fmt.Println(string(append(line, '}')))
	// Output: {"script":"say \"<hi>\"\n"}
}
