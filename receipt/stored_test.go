package receipt

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/canon"
	"github.com/sandbank/sandbank/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// signedRuns are realRuns through effects that sign with fuzzKey.
func signedRuns(t *testing.T) []verifyRun {
	t.Helper()
	var out []verifyRun
	for _, run := range realRunsSignedBy(t, fuzzKey) {
		out = append(out, run)
	}
	return out
}

// TestDecodeReadsWhatTheEffectWrites: every real record, signed, reads
// back equal from its JSON, and its receipt from its canonical JSON and
// from encoding/json's; both verify with the key.
func TestDecodeReadsWhatTheEffectWrites(t *testing.T) {
	key := WithKey(fuzzKey.PublicKey())
	for _, run := range signedRuns(t) {
		b, err := json.Marshal(run.rec)
		require.NoError(t, err)
		rec, err := DecodeRecord(b)
		require.NoError(t, err, "%s: %s", run.name, b)
		var lenient effect.Record
		require.NoError(t, json.Unmarshal(b, &lenient))
		assert.Equal(t, &lenient, rec, "%s: what encoding/json reads of genuine text", run.name)
		assert.NoError(t, Verify(rec, run.script, run.input, key, RequireSignature()), run.name)

		canon, err := run.rec.Receipt.Canonical()
		require.NoError(t, err)
		plain, err := json.Marshal(run.rec.Receipt)
		require.NoError(t, err)
		for _, text := range [][]byte{canon, plain} {
			r, err := DecodeReceipt(text)
			require.NoError(t, err, run.name)
			assert.Equal(t, run.rec.Receipt, r, run.name)
			assert.NoError(t, VerifyReceipt(r, run.script, run.input, key, RequireSignature()), run.name)
		}
	}
}

// The ways a member of an object is made to read two ways.
const (
	twice   = iota // "k":v,"k":v
	inCase         // "k":v,"K":v (encoding/json matches both to one field)
	unknown        // "k":v,"k_":v (a name of no format)
)

// rewrite writes v as JSON text, keys sorted, with the member at target
// (a JSON Pointer) written the way mode says.
func rewrite(v any, at, target string, mode int) string {
	switch v := v.(type) {
	case map[string]any:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(v)) {
			p := at + "/" + canon.PointerToken(k)
			member := quote(k) + ":" + rewrite(v[k], p, target, mode)
			if p == target {
				switch mode {
				case twice:
					member += "," + member
				case inCase:
					member += "," + quote(otherCase(k)) + ":" + rewrite(v[k], p, target, mode)
				case unknown:
					member += "," + quote(k+"_") + ":" + rewrite(v[k], p, target, mode)
				}
			}
			parts = append(parts, member)
		}
		return "{" + strings.Join(parts, ",") + "}"
	case []any:
		parts := make([]string, len(v))
		for i, item := range v {
			parts[i] = rewrite(item, fmt.Sprintf("%s/%d", at, i), target, mode)
		}
		return "[" + strings.Join(parts, ",") + "]"
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// otherCase is k with its first letter in the other case.
func otherCase(k string) string {
	r, n := utf8.DecodeRuneInString(k)
	if unicode.IsUpper(r) {
		return string(unicode.ToLower(r)) + k[n:]
	}
	return string(unicode.ToUpper(r)) + k[n:]
}

// pointers lists the JSON Pointers of every member of every object in v.
func pointers(v any, at string) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			p := at + "/" + canon.PointerToken(k)
			out = append(out, p)
			out = append(out, pointers(v[k], p)...)
		}
	case []any:
		for i, item := range v {
			out = append(out, pointers(item, fmt.Sprintf("%s/%d", at, i))...)
		}
	}
	return out
}

// TestDecodeRefusesTextThatReadsTwoWays: in every real signed receipt and
// record, every member at every depth written twice, under its name in
// another case, or beside a name of no format, is refused with
// ErrRecordMismatch (inside a record's value, where any name is the
// value's own, a member written twice). encoding/json reads such text as
// the genuine receipt, which then verifies, while other readers see the
// first member (issue 41, class 3).
func TestDecodeRefusesTextThatReadsTwoWays(t *testing.T) {
	key := WithKey(fuzzKey.PublicKey())
	for _, run := range signedRuns(t) {
		b, err := json.Marshal(run.rec)
		require.NoError(t, err)
		recDoc, err := canon.Decode(b)
		require.NoError(t, err)
		text, err := run.rec.Receipt.Canonical()
		require.NoError(t, err)
		rcptDoc, err := canon.Decode(text)
		require.NoError(t, err)
		for _, target := range pointers(rcptDoc, "") {
			for mode, name := range []string{"twice", "in another case", "beside a name of no format"} {
				text := rewrite(rcptDoc, "", target, mode)
				_, err := DecodeReceipt([]byte(text))
				assert.ErrorIs(t, err, ErrRecordMismatch, "%s: receipt member %s %s", run.name, target, name)
			}
		}
		for _, target := range pointers(recDoc, "") {
			modes := []string{"twice", "in another case", "beside a name of no format"}
			if strings.HasPrefix(target, "/value/") {
				modes = modes[:1]
			}
			for mode, name := range modes {
				text := rewrite(recDoc, "", target, mode)
				_, err := DecodeRecord([]byte(text))
				assert.ErrorIs(t, err, ErrRecordMismatch, "%s: record member %s %s", run.name, target, name)
			}
		}
	}

	// The receipt: a forged "outcome":"ok" first, the genuine
	// signed outcome under "Outcome".
	run := signedRuns(t)[0]
	for _, r := range signedRuns(t) {
		if r.rec.Receipt.Outcome == record.CodeScriptError.String() {
			run = r
		}
	}
	require.Equal(t, "scriptError", run.rec.Receipt.Outcome)
	canon, err := run.rec.Receipt.Canonical()
	require.NoError(t, err)
	forged := strings.Replace(string(canon), `"outcome":"scriptError"`, `"outcome":"ok","Outcome":"scriptError"`, 1)
	var lenient record.Receipt
	require.NoError(t, json.Unmarshal([]byte(forged), &lenient))
	require.NoError(t, VerifyReceipt(lenient, run.script, run.input, key, RequireSignature()), "encoding/json reads the genuine receipt")
	var other map[string]any
	require.NoError(t, json.Unmarshal([]byte(forged), &other))
	require.Equal(t, "ok", other["outcome"], "a reader that matches names exactly sees ok")
	_, err = DecodeReceipt([]byte(forged))
	require.ErrorIs(t, err, ErrRecordMismatch)
	assert.Equal(t, `effect: record does not verify: its JSON text reads two ways: "/Outcome" is not one of the format's names, or does not read back as written`, err.Error())

	// A value spelled another way: a time with a needless trailing zero,
	// a signature whose base64 has other padding bits (encoding/json
	// decodes both to the signed receipt).
	started := run.rec.Receipt.Started.Format(time.RFC3339Nano)
	zero := "0Z" // after the fraction's last digit, or a fraction of its own
	if !strings.Contains(started, ".") {
		zero = ".0Z"
	}
	value := base64.StdEncoding.EncodeToString(run.rec.Receipt.Signature.Value)
	require.True(t, strings.HasSuffix(value, "=="))
	last := strings.IndexByte(base64Alphabet, value[len(value)-3])
	require.Zero(t, last&15, "the last character's low bits are padding")
	for name, spelled := range map[string]string{
		"a trailing zero": strings.Replace(string(canon), `"started":"`+started+`"`, `"started":"`+strings.TrimSuffix(started, "Z")+zero+`"`, 1),
		"padding bits":    strings.Replace(string(canon), value, value[:len(value)-3]+string(base64Alphabet[last+1])+"==", 1),
	} {
		require.NotEqual(t, string(canon), spelled, name)
		var lenient record.Receipt
		require.NoError(t, json.Unmarshal([]byte(spelled), &lenient), name)
		require.NoError(t, VerifyReceipt(lenient, run.script, run.input, key, RequireSignature()), name)
		_, err = DecodeReceipt([]byte(spelled))
		assert.ErrorIs(t, err, ErrRecordMismatch, name)
	}
}

const base64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// TestDecodeRecordAsRunPrintsIt: the object "sandbank run --json" prints
// (the record's members beside "ok", a typed failure's members in the
// object itself) reads as the record; "ok" must agree with the outcome,
// and a failure may not be in both places.
func TestDecodeRecordAsRunPrintsIt(t *testing.T) {
	var run verifyRun
	for _, r := range signedRuns(t) {
		if r.rec.Receipt.Outcome == record.CodeScriptError.String() {
			run = r
		}
	}
	require.NotNil(t, run.rec)
	b, err := json.Marshal(run.rec)
	require.NoError(t, err)
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &m))
	var f map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(m["failure"], &f))
	delete(m, "failure")
	for k, v := range f {
		m[k] = v
	}
	m["ok"] = json.RawMessage(`false`)
	m["hostCalls"] = json.RawMessage(`[{"name":"h","args":[1]}]`)
	printed, err := json.Marshal(m)
	require.NoError(t, err)
	rec, err := DecodeRecord(printed)
	require.NoError(t, err)
	assert.Equal(t, run.rec, rec)
	assert.Equal(t, "boom", rec.Failure.Message)

	m["ok"] = json.RawMessage(`true`)
	b, err = json.Marshal(m)
	require.NoError(t, err)
	_, err = DecodeRecord(b)
	assert.ErrorIs(t, err, ErrRecordMismatch, `"ok" against the outcome`)

	m["ok"] = json.RawMessage(`false`)
	m["failure"] = json.RawMessage(`{"code":"scriptError"}`)
	b, err = json.Marshal(m)
	require.NoError(t, err)
	_, err = DecodeRecord(b)
	assert.ErrorIs(t, err, ErrRecordMismatch, "a failure in both places")

	for _, text := range []string{`[]`, `"x"`, `{`, `{"receipt":{"outcome":5}}`} {
		_, err := DecodeRecord([]byte(text))
		require.Error(t, err, text)
		assert.NotErrorIs(t, err, ErrRecordMismatch, "%s is not a record at all", text)
	}
}
