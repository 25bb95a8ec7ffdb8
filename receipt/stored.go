package receipt

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/canon"
	"github.com/sandbank/sandbank/internal/textbound"
	"github.com/sandbank/sandbank/record"
)

// This file reads a stored record or receipt from its JSON text so that
// it reads one way only: encoding/json matches a key to a field
// case-insensitively and keeps the last of a duplicate key, while other
// readers keep the first or match exactly, so text such as
// {"outcome":"ok","Outcome":"scriptError"} would verify as what was signed
// while every other reader sees "ok". The decoders work on the canonical
// form of the text (canonicalizeStrict, which refuses a duplicate key) and
// accept it only when every member it holds is one the format writes back,
// with the same value.

// errNotStored is the error of text that is not a JSON object of the
// expected form at all (an invalid request, not a record that fails to
// verify).
var errNotStored = errors.New("effect: not a JSON object of a stored record or receipt")

// ambiguous reports text that reads two ways; it matches ErrRecordMismatch.
func ambiguous(format string, args ...any) error {
	return fmt.Errorf("%w: its JSON text reads two ways: "+format, append([]any{ErrRecordMismatch}, args...)...)
}

// DecodeReceipt reads a stored receipt from its JSON text, as
// [record.Receipt.Canonical] or encoding/json writes it, strictly: an object (at
// any depth) with a key twice, a key that is not exactly one of the
// receipt's names (a different case is another name), or a value that does
// not read back as written (a number where the receipt has a string, a
// time or a signature spelled another way) is an error matching
// ErrRecordMismatch, since the text then reads differently to different
// readers. What it returns is what every reader of the text sees; check it
// with [VerifyReceipt]. Text that is not a JSON object of a receipt is
// another error.
func DecodeReceipt(b []byte) (record.Receipt, error) {
	var r record.Receipt
	if err := decodeExact(b, &r); err != nil {
		return record.Receipt{}, err
	}
	return r, nil
}

// DecodeRecord reads a stored record from its JSON text as strictly as
// DecodeReceipt reads a receipt, the record's value read as its canonical
// form. The text is a Record as encoding/json writes it, or the object
// "sandbank run --json" prints: the record's members beside "ok" (which
// must agree with the receipt's outcome), "retryable" and the run's own
// "hostCalls" list (not part of the record, and not checked), with a
// typed failure's members in the object itself rather than under
// "failure". Check what it returns with [Verify].
func DecodeRecord(b []byte) (*effect.Record, error) {
	text, err := strictCanonical(b)
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(text, &top) != nil || top == nil {
		return nil, errNotStored
	}
	okRaw, printed := top["ok"]
	var ok, retryable bool
	if printed {
		// The object run --json prints: its own members out, the
		// failure's members under "failure".
		if json.Unmarshal(okRaw, &ok) != nil {
			return nil, ambiguous(`"ok" is not true or false`)
		}
		if raw, has := top["retryable"]; has && json.Unmarshal(raw, &retryable) != nil {
			return nil, ambiguous(`"retryable" is not true or false`)
		}
		delete(top, "ok")
		delete(top, "retryable")
		delete(top, "hostCalls")
		if _, flat := top["code"]; flat {
			if _, has := top["failure"]; has {
				return nil, ambiguous(`a failure both in "failure" and in the object`)
			}
			failure := map[string]json.RawMessage{}
			for k, v := range top {
				if !recordNames[k] {
					failure[k] = v
					delete(top, k)
				}
			}
			if top["failure"], err = json.Marshal(failure); err != nil {
				return nil, errNotStored
			}
		}
		if text, err = json.Marshal(top); err != nil {
			return nil, errNotStored
		}
	}
	rec := &effect.Record{}
	if err := decodeExact(text, rec); err != nil {
		return nil, err
	}
	if printed && ok != (rec.Receipt.Outcome == record.OutcomeOK) {
		return nil, ambiguous(`"ok" is %t, the receipt's outcome is %q`, ok, boundText(rec.Receipt.Outcome))
	}
	return rec, nil
}

// recordNames are the names of a Record's members, from its fields.
var recordNames = jsonNames(reflect.TypeFor[effect.Record]())

// jsonNames lists the JSON names of the fields of struct type t.
func jsonNames(t reflect.Type) map[string]bool {
	names := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && name != "" && name != "-" {
			names[name] = true
		}
	}
	return names
}

// strictCanonical returns the canonical form of b, which must be a JSON
// object in which no object has a key twice.
func strictCanonical(b []byte) ([]byte, error) {
	if !json.Valid(b) {
		return nil, errNotStored
	}
	text, err := canon.Strict(b)
	switch {
	case errors.Is(err, canon.ErrDuplicateKey):
		return nil, ambiguous("an object has a key twice")
	case err != nil || len(text) == 0 || text[0] != '{':
		return nil, errNotStored
	}
	return text, nil
}

// decodeExact decodes the JSON object text b into v (a pointer to a
// Receipt or a Record) and checks that it reads one way only: no object
// has a key twice, and every member of its canonical form is one v
// encodes back, with the same value (members v would add, absent from b,
// are zero, as every reader sees them).
func decodeExact(b []byte, v any) error {
	text, err := strictCanonical(b)
	if err != nil {
		return err
	}
	if json.Unmarshal(text, v) != nil {
		return errNotStored
	}
	back, err := json.Marshal(v)
	if err != nil {
		return errNotStored
	}
	if back, err = canon.Canonical(back); err != nil {
		return errNotStored
	}
	read, err := canon.Decode(text)
	if err != nil {
		return errNotStored
	}
	written, err := canon.Decode(back)
	if err != nil {
		return errNotStored
	}
	if path, ok := covered(read, written, ""); !ok {
		return ambiguous("%q is not one of the format's names, or does not read back as written", textbound.Bound(path, 120))
	}
	return nil
}

// covered reports whether every member of read, at any depth, is in
// written with the same value, and otherwise the JSON Pointer of the first
// that is not.
func covered(read, written any, path string) (string, bool) {
	switch r := read.(type) {
	case map[string]any:
		w, ok := written.(map[string]any)
		if !ok {
			return path, false
		}
		for _, k := range slices.Sorted(maps.Keys(r)) {
			at := path + "/" + canon.PointerToken(k)
			wv, ok := w[k]
			if !ok {
				return at, false
			}
			if p, ok := covered(r[k], wv, at); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		w, ok := written.([]any)
		if !ok || len(w) != len(r) {
			return path, false
		}
		for i := range r {
			if p, ok := covered(r[i], w[i], fmt.Sprintf("%s/%d", path, i)); !ok {
				return p, false
			}
		}
		return "", true
	default:
		return path, read == written
	}
}
