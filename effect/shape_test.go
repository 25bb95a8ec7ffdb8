package effect

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/canon"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/record"
)

// shapeCheck compiles schema and checks the JSON text value against it, as
// Evaluate does (the value decoded with json.Number).
func shapeCheck(t *testing.T, schema, value string) error {
	t.Helper()
	s, err := compileShape([]byte(schema))
	require.NoError(t, err)
	v, err := canon.Decode([]byte(value))
	require.NoError(t, err)
	return s.validate(v)
}

// TestShapeDepth: a shape nested deeper than MaxShapeDepth is an invalid
// call refused before it is compiled (compile time grows much faster than
// size with depth); brackets inside strings do not count.
func TestShapeDepth(t *testing.T) {
	nested := func(depth int) string {
		return strings.Repeat(`{"items":`, depth-1) + `{}` + strings.Repeat(`}`, depth-1)
	}
	_, err := compileShape([]byte(nested(MaxShapeDepth)))
	require.NoError(t, err, "a shape at the depth limit compiles")
	_, err = compileShape([]byte(`{"pattern":"` + strings.Repeat("[", 2*MaxShapeDepth) + `a]"}`))
	require.NoError(t, err, "brackets inside a string do not count")

	f := newFixture(t, fakebackend.Echo(), nil)
	_, err = f.e.Evaluate(context.Background(), Call{Script: f.addr, Input: 1, Shape: json.RawMessage(nested(MaxShapeDepth + 1))})
	requireInvalid(t, err, ErrInvalidShape)
	assert.Equal(t, "effect: invalid shape (nested deeper than the depth limit of 128 levels)", err.Error())
	f.untouched(t)
	assert.Zero(t, f.e.shapes.len(), "a refused shape is not cached")
}

// TestShapeSize: a shape larger than MaxShapeBytes is an invalid call
// refused before it is compiled (compile time grows much faster than size).
func TestShapeSize(t *testing.T) {
	padded := func(size int) string {
		const head, tail = `{"description":"`, `"}`
		return head + strings.Repeat("x", size-len(head)-len(tail)) + tail
	}
	_, err := compileShape([]byte(padded(MaxShapeBytes)))
	require.NoError(t, err, "a shape at the size limit compiles")

	f := newFixture(t, fakebackend.Echo(), nil)
	_, err = f.e.Evaluate(context.Background(), Call{Script: f.addr, Input: 1, Shape: json.RawMessage(padded(MaxShapeBytes + 1))})
	requireInvalid(t, err, ErrInvalidShape)
	assert.Equal(t, "effect: invalid shape (larger than the size limit of 16384 bytes)", err.Error())
	f.untouched(t)
	assert.Zero(t, f.e.shapes.len(), "a refused shape is not cached")
}

// TestShapePatternBytes: a shape whose regular expressions hold more than
// 2 KiB in all is an invalid call, refused before they are compiled: 15 KB
// of case-folded wide classes took 12 to 18 s to compile (issue 41). 2 KiB
// of them compiles (in about a second at worst).
func TestShapePatternBytes(t *testing.T) {
	worst := worstRegex
	for _, schema := range []string{
		`{"pattern":"` + worst(15000) + `"}`,
		`{"properties":{"a":{"pattern":"` + worst(1080) + `"},"b":{"pattern":"` + worst(1080) + `"}}}`,
		`{"patternProperties":{"` + worst(1080) + `":{},"x` + worst(1080) + `":{}}}`,
	} {
		require.LessOrEqual(t, len(schema), MaxShapeBytes)
		_, err := compileShape([]byte(schema))
		requireInvalid(t, err, ErrInvalidShape)
		assert.Equal(t, "effect: invalid shape (its patterns hold more than the limit of 2048 bytes of regular expression)", err.Error())
	}
	_, err := compileShape([]byte(`{"pattern":"` + worst(2040) + `"}`))
	assert.NoError(t, err, "a shape with 2 KiB of patterns compiles")
}

// TestShapeMismatchNamesTheValue: the reason of a shapeMismatch is the
// first violation, at the JSON Pointer of the failing part of the value,
// whichever keyword reached it (items, additionalProperties, a $ref).
func TestShapeMismatchNamesTheValue(t *testing.T) {
	cases := []struct{ name, schema, value, reason string }{
		{"property", `{"properties":{"n":{"type":"integer"}}}`, `{"n":"3"}`, "at '/n': got string, want integer"},
		{"required", `{"required":["n"]}`, `{}`, "at '': missing property 'n'"},
		{"maximum", `{"properties":{"n":{"maximum":10}}}`, `{"n":11}`, "at '/n': maximum: got 11, want 10"},
		{"item", `{"items":{"type":"string"}}`, `["a","b",3]`, "at '/2': got number, want string"},
		{"additional property", `{"additionalProperties":{"type":"string"}}`, `{"a":"x","b":3}`, "at '/b': got number, want string"},
		{"through a $ref", `{"$defs":{"s":{"type":"string"}},"properties":{"a":{"items":{"$ref":"#/$defs/s"}}}}`, `{"a":["x",3]}`, "at '/a/1': got number, want string"},
		{"enum quotes the schema, not the value", `{"enum":["a","b"]}`, `{"big":[1,2,3]}`, "at '': value must be one of 'a', 'b'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := shapeCheck(t, tc.schema, tc.value)
			var fail *Failure
			require.ErrorAs(t, err, &fail)
			assert.Equal(t, record.CodeShapeMismatch, fail.Code)
			assert.Equal(t, tc.reason, fail.Reason)
		})
	}
}

// TestShapeNumbersAreExact: numbers in the value and in the schema are
// compared exactly (the value is decoded with json.Number and every
// number is a JSON number, never a string), past float64's precision.
func TestShapeNumbersAreExact(t *testing.T) {
	cases := []struct {
		name, schema, value string
		ok                  bool
	}{
		{"a number is a number", `{"type":"number"}`, `1`, true},
		{"a number is not a string", `{"type":"string"}`, `1`, false},
		{"items of numbers", `{"items":{"type":"string"}}`, `["a",3]`, false},
		{"big integer", `{"type":"integer"}`, `-123456789012345678901234567890`, true},
		{"maximum above 2^53, equal", `{"maximum":9007199254740993}`, `9007199254740993`, true},
		{"maximum above 2^53, one more", `{"maximum":9007199254740993}`, `9007199254740994`, false},
		{"const above 2^53", `{"const":9007199254740993}`, `9007199254740993`, true},
		{"const above 2^53, one less", `{"const":9007199254740993}`, `9007199254740992`, false},
		{"decimal multipleOf", `{"multipleOf":0.01}`, `0.07`, true},
		{"maximum past float64", `{"maximum":1e400}`, `1e399`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := shapeCheck(t, tc.schema, tc.value)
			if tc.ok {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, ErrShapeMismatch)
		})
	}
}

// TestShapeIsCheckedAgainstItsMetaSchema: a shape that is JSON but not a
// valid schema of its draft is an invalid call, not a mismatch at run time
// nor a shape that lets everything through.
func TestShapeIsCheckedAgainstItsMetaSchema(t *testing.T) {
	for _, schema := range []string{
		`{"type":"whatever"}`,
		`{"minLength":-1}`,
		`{"multipleOf":0}`,
		`{"required":["a","a"]}`,
		`{"properties":{"n":{"type":9}}}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","maximum":1,"exclusiveMaximum":1}`,
	} {
		_, err := compileShape([]byte(schema))
		assert.ErrorIs(t, err, ErrInvalidShape, schema)
	}
}

// TestShapeFormat: "format" is an annotation in draft 2020-12 (the default
// draft) and an assertion in draft-07 and earlier, as the drafts say.
func TestShapeFormat(t *testing.T) {
	assert.NoError(t, shapeCheck(t, `{"format":"email"}`, `"nope"`))
	assert.NoError(t, shapeCheck(t, `{"$schema":"https://json-schema.org/draft/2020-12/schema","format":"email"}`, `"nope"`))
	err := shapeCheck(t, `{"$schema":"http://json-schema.org/draft-07/schema#","format":"email"}`, `"nope"`)
	var fail *Failure
	require.ErrorAs(t, err, &fail)
	assert.Equal(t, "at '': 'nope' is not valid email: missing @", fail.Reason)
	assert.NoError(t, shapeCheck(t, `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"string"}`, `"a"`), "draft 2019-09 is supported")
}
