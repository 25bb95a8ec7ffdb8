package effect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/internal/canon"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/internal/shape"
	"github.com/sandbank/sandbank/internal/shape/shapetest"
	"github.com/sandbank/sandbank/record"
)

// jsonArray is a JSON array of n copies of item.
func jsonArray(n int, item string) string {
	return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
}

// ints is the JSON array 0, 1, …, n-1.
func ints(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprint(i)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// TestShapeCostRefusesBombs: a shape whose subschemas multiply through
// applicators and $ref is an invalid call, refused when it is compiled,
// before any value meets it (each of these took seconds to minutes per
// value without the bound; docs/RATIONALE.md, R29).
func TestShapeCostRefusesBombs(t *testing.T) {
	bombs := map[string]string{
		"anyOf through $ref, 2 branches, 20 levels": shapetest.RefChain(20, "anyOf", 2),
		"oneOf through $ref, 2 branches, 20 levels": shapetest.RefChain(20, "oneOf", 2),
		"allOf through $ref, 2 branches, 20 levels": shapetest.RefChain(20, "allOf", 2),
		"allOf through $ref, 3 branches, 13 levels": shapetest.RefChain(13, "allOf", 3),
		"if/then/else through $ref, 20 levels":      shapetest.IfChain(20),
		"dependentSchemas through $ref, 20 levels":  shapetest.DepChain(20),
		"items doubling per level of the value":     `{"$defs":{"n":{"items":{"allOf":[{"$ref":"#/$defs/n"},{"$ref":"#/$defs/n"}]}}},"$ref":"#/$defs/n"}`,
		"a property doubling per level":             `{"$defs":{"n":{"properties":{"a":{"oneOf":[{"$ref":"#/$defs/n"},{"$ref":"#/$defs/n"}]}}}},"$ref":"#/$defs/n"}`,
		"an enum of thousands":                      `{"items":{"enum":` + ints(3000) + `}}`,
		"a multipleOf of a huge rational":           `{"items":{"multipleOf":1e-999999}}`,
		"a minimum of a huge rational":              `{"items":{"minimum":1e999999}}`,
		"an enum of a huge number":                  `{"items":{"enum":[1e999999]}}`,
		"a const of a long array":                   `{"items":{"const":` + ints(2500) + `}}`,
	}
	for name, schema := range bombs {
		t.Run(name, func(t *testing.T) {
			require.LessOrEqual(t, len(schema), MaxShapeBytes)
			_, err := compileShape([]byte(schema))
			requireInvalid(t, err, ErrInvalidShape)
			assert.Equal(t, "effect: invalid shape (a part of a value may need more than the cost limit of 8192 schema checks, with every $ref unfolded)", err.Error())
		})
	}

	f := newFixture(t, fakebackend.Echo(), nil)
	_, err := f.e.Evaluate(context.Background(), Call{Script: f.addr, Input: 1, Shape: json.RawMessage(shapetest.RefChain(20, "anyOf", 2))})
	requireInvalid(t, err, ErrInvalidShape)
	f.untouched(t)
	assert.Zero(t, f.e.shapes.len(), "a refused shape is not cached")
}

// TestShapeCostCountsDynamicAnchors: a $dynamicRef may resolve to a
// subschema nothing else reaches (here the root resource's $defs/x, by
// the scopes the validator passed through); its cost counts.
func TestShapeCostCountsDynamicAnchors(t *testing.T) {
	chain := shapetest.RefChain(20, "allOf", 2)
	defs := chain[len(`{"$defs":{`):strings.LastIndex(chain, `},"$ref"`)]
	schema := `{"$defs":{"x":{"$dynamicAnchor":"n","$ref":"#/$defs/d0"},` + defs + `},` +
		`"properties":{"a":{"$id":"inner","$dynamicAnchor":"n","items":{"$dynamicRef":"#n"}}}}`
	_, err := compileShape([]byte(schema))
	requireInvalid(t, err, ErrInvalidShape)
	assert.Equal(t, shape.ErrTooCostly.Error(), err.Error())

	// The same with a cheap $defs/x is an ordinary shape.
	cheap := `{"$defs":{"x":{"$dynamicAnchor":"n","type":"integer"}},` +
		`"properties":{"a":{"$id":"inner","$dynamicAnchor":"n","items":{"$dynamicRef":"#n"}}}}`
	assert.NoError(t, shapeCheck(t, cheap, `{"a":[1,2]}`))
	assert.ErrorIs(t, shapeCheck(t, cheap, `{"a":["x"]}`), ErrShapeMismatch, "the validator resolves #n to $defs/x")
}

// TestShapeCostRefusesInPlaceCycles: a $ref cycle that never descends
// into the value is an invalid call (the validator would stop at it).
func TestShapeCostRefusesInPlaceCycles(t *testing.T) {
	for _, schema := range []string{
		`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"anyOf":[{"type":"string"},{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`,
		`{"allOf":[{"$ref":"#"}]}`,
	} {
		_, err := compileShape([]byte(schema))
		requireInvalid(t, err, ErrInvalidShape)
		assert.Equal(t, "effect: invalid shape (a $ref cycle that never descends into the value)", err.Error())
	}
}

// TestShapeCostBombIsRefusedNotRun: without the cost bound this shape
// takes minutes per value (2^30 subschemas; 2^20 took 8 s); with it, it is
// refused at once. The check runs under a generous deadline so that a
// regression fails instead of hanging the suite.
func TestShapeCostBombIsRefusedNotRun(t *testing.T) {
	schema := shapetest.RefChain(30, "anyOf", 2)
	done := make(chan error, 1)
	go func() {
		s, err := compileShape([]byte(schema))
		if err == nil {
			v, _ := canon.Decode([]byte(`"x"`))
			err = s.validate(v)
		}
		done <- err
	}()
	select {
	case err := <-done:
		requireInvalid(t, err, ErrInvalidShape)
	case <-time.After(30 * time.Second):
		t.Fatal("a shape of 2^30 subschemas was not refused: its validation ran for 30 s")
	}
}

// TestShapeCostPassesOrdinarySchemas: realistic schemas compile and
// validate, and large values of ordinary shapes stay within shape.MaxWork.
func TestShapeCostPassesOrdinarySchemas(t *testing.T) {
	deepTree := strings.Repeat(`{"name":"n","children":[`, 200) + `{"name":"leaf"}` + strings.Repeat(`]}`, 200)
	value := `{"id":"x","status":"active","p1":"pending","p2":[[{"amount":3,"currency":"EUR"}]],"p3":null,"p4":` + deepTree + `,"p5":7,"p9":{"city":"Paris","zip":"75001"}}`
	assert.NoError(t, shapeCheck(t, shapetest.OpenAPILike(), value))
	err := shapeCheck(t, shapetest.OpenAPILike(), `{"id":"x","status":"gone"}`)
	assert.ErrorIs(t, err, ErrShapeMismatch)

	for _, tc := range []struct{ schema, value string }{
		{`{"items":{"type":"number"}}`, jsonArray(1<<21, "1")},
		{`{"items":{"enum":["a","b","c"]},"uniqueItems":true}`, jsonArray(100000, `"a"`)},
		{`{"type":"array","items":{"type":"object"},"uniqueItems":true}`, jsonArray(2000, `{"a":1}`)},
		{shapetest.OpenAPILike(), `{"id":"x","status":"active","p2":` + jsonArray(1000, jsonArray(20, `{"amount":1,"currency":"USD"}`)) + `}`},
	} {
		s, err := compileShape([]byte(tc.schema))
		require.NoError(t, err)
		v, err := canon.Decode([]byte(tc.value))
		require.NoError(t, err)
		assert.True(t, s.cost.Work(v), "%.60s", tc.schema)
	}
}

// TestShapeWorkBound: a value whose check against its shape would pass
// shape.MaxWork is limitExceeded (output), refused before the check: a
// large array against a costly enum, numbers the validator turns into
// huge rationals, a large uniqueItems array of arrays.
func TestShapeWorkBound(t *testing.T) {
	// A pattern of alternatives, as long as a shape's patterns may be.
	var alts []string
	for i := 0; len(strings.Join(alts, "|")) < maxShapePatternBytes-64; i++ {
		alts = append(alts, "x"+strings.Repeat("y", i%5)+"z")
	}
	bigPattern := `"^(` + strings.Join(alts, "|") + `)*$"`
	manyKeys := make([]string, 70000)
	for i := range manyKeys {
		manyKeys[i] = fmt.Sprintf(`"%0100d":1`, i)
	}
	for name, tc := range map[string]struct{ schema, value string }{
		"a 2 KB pattern against an 8 MB string": {`{"pattern":` + bigPattern + `}`, `"` + strings.Repeat("xyz", 2800000) + `q"`},
		"a 2 KB pattern against 70000 keys":     {`{"patternProperties":{` + bigPattern + `:{}}}`, `{` + strings.Join(manyKeys, ",") + `}`},
		"an enum of 1500 against 20000 items":   {`{"items":{"enum":` + ints(1500) + `}}`, jsonArray(20000, "-1")},
		"a number with a huge exponent":         {`{"minimum":0}`, `1e999999`},
		"a number past what a rational holds":   {`{"multipleOf":3}`, `1e100000000`},
		"numbers with large exponents":          {`{"items":{"enum":[1,2]}}`, jsonArray(100, "1e99999")},
		"uniqueItems over 100000 small arrays":  {`{"uniqueItems":true}`, "[" + strings.ReplaceAll(ints(100000), ",", "],[") + "]"},
	} {
		t.Run(name, func(t *testing.T) {
			err := shapeCheck(t, tc.schema, tc.value)
			var fail *Failure
			require.ErrorAs(t, err, &fail)
			assert.Equal(t, record.CodeLimitExceeded, fail.Code)
			assert.Equal(t, record.LimitOutput, fail.Kind)
			assert.Equal(t, "the result needs more than the work limit of 4194304 schema checks against the shape", fail.Reason)
		})
	}
}

// TestShapeWorkBoundThroughEvaluate: the work bound holds on Evaluate's
// path, after the run, as limitExceeded (output) with its reason.
func TestShapeWorkBoundThroughEvaluate(t *testing.T) {
	f := newFixture(t, fakebackend.Echo(), nil)
	_, err := f.e.Evaluate(context.Background(), Call{Script: f.addr, Input: json.RawMessage(`[1e999999]`), Shape: json.RawMessage(`{"items":{"multipleOf":3}}`)})
	var fail *Failure
	require.ErrorAs(t, err, &fail)
	assert.Equal(t, record.CodeLimitExceeded, fail.Code)
	assert.Equal(t, record.LimitOutput, fail.Kind)
	assert.Equal(t, "effect: limitExceeded (output): the result needs more than the work limit of 4194304 schema checks against the shape", err.Error())
}

// TestShapeValidatorPanicIsAMismatch: a panic of the validator (it has
// one on a number it cannot make a rational of) is a shapeMismatch, not a
// crash; here the work bound is bypassed (check, not validate) to reach it.
func TestShapeValidatorPanicIsAMismatch(t *testing.T) {
	s, err := compileShape([]byte(`{"multipleOf":3}`))
	require.NoError(t, err)
	v, err := canon.Decode([]byte(`1e100000000`))
	require.NoError(t, err)
	err = s.check(v)
	var fail *Failure
	require.ErrorAs(t, err, &fail)
	assert.Equal(t, record.CodeShapeMismatch, fail.Code)
	assert.Equal(t, "the value could not be checked against the shape", fail.Reason)
}

// allocated is what fn allocates on the heap, in bytes.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestShapeWorkWeighsARegexFormat: a 4 MiB string under a draft-07
// format "regex" (within the output bound) is limitExceeded (output),
// refused before the validator compiles it as a regular expression (which
// took 7 to 9 s and 1.3 GB, issue 41). It allocates little more than the
// value's own copies.
func TestShapeWorkWeighsARegexFormat(t *testing.T) {
	value := `"` + strings.Repeat("(a)", 4<<20/3-1) + `"`
	f := newFixture(t, fakebackend.Return(okOutcome(value)), nil)
	var err error
	n := allocated(func() {
		_, err = f.e.Evaluate(context.Background(), Call{Script: f.addr, Input: 1, Shape: json.RawMessage(shapetest.Draft7(`"format":"regex"`))})
	})
	var fail *Failure
	require.ErrorAs(t, err, &fail)
	assert.Equal(t, record.CodeLimitExceeded, fail.Code)
	assert.Equal(t, record.LimitOutput, fail.Kind)
	assert.Equal(t, shape.WorkReason, fail.Reason)
	assert.Less(t, n, uint64(64<<20), "allocated %d MiB for a 4 MiB value", n>>20)
}

// worstRegex is, as JSON string content, a valid regular expression of n
// bytes (n a multiple of 18) that costs Go's parser the most per byte of those measured: each
// case-folded class of almost every code point takes milliseconds.
func worstRegex(n int) string { return strings.Repeat(`(?i)[b-\\x{10FFFF}]`, n/18) }

// TestShapeWorkFormats: what each format assertion does with a string is
// weighed. A "regex" format is asserted only on strings up to 1 KiB, and
// weighs 256 per byte; every other format the validator asserts weighs one
// per 8 bytes, for each subschema that asserts it; a format the validator
// does not assert (the idn- ones) costs nothing.
func TestShapeWorkFormats(t *testing.T) {
	limit := func(t *testing.T, err error) {
		t.Helper()
		var fail *Failure
		require.ErrorAs(t, err, &fail)
		assert.Equal(t, record.CodeLimitExceeded, fail.Code)
		assert.Equal(t, record.LimitOutput, fail.Kind)
	}
	t.Run("regex", func(t *testing.T) {
		one := worstRegex(1008)
		require.NoError(t, shapeCheck(t, shapetest.Draft7(`"format":"regex"`), `"`+one+`"`), "a 1 KiB regex is checked")
		err := shapeCheck(t, shapetest.Draft7(`"format":"regex"`), `"(`+strings.Repeat("a", 1023)+`"`)
		assert.ErrorIs(t, err, ErrShapeMismatch, "an invalid one is a mismatch")
		limit(t, shapeCheck(t, shapetest.Draft7(`"format":"regex"`), `"`+strings.Repeat("a", 1025)+`"`))
		limit(t, shapeCheck(t, shapetest.Draft7(`"items":{"format":"regex"}`), jsonArray(17, `"`+one+`"`)))
		limit(t, shapeCheck(t, shapetest.Draft7(`"propertyNames":{"format":"regex"}`), `{"`+strings.Repeat("a", 1025)+`":1}`))
	})
	// Every format santhosh-tekuri/jsonschema/v6 asserts but "regex": each
	// is linear in the string, and 64 subschemas asserting it on a 1 MiB
	// string are past the limit (a gigabyte allocated without the bound).
	long := `"` + strings.Repeat("/", 1<<20) + `"`
	for _, name := range []string{
		"date", "date-time", "duration", "email", "hostname", "ipv4", "ipv6",
		"iri", "iri-reference", "json-pointer", "period", "relative-json-pointer",
		"semver", "time", "uri", "uri-reference", "uri-template", "uuid",
	} {
		t.Run(name, func(t *testing.T) {
			one := `{"format":"` + name + `"}`
			require.ErrorIs(t, shapeCheck(t, shapetest.Draft7(`"format":"`+name+`"`), `"\u0000"`), ErrShapeMismatch, "the validator asserts it")
			var err error
			n := allocated(func() {
				err = shapeCheck(t, shapetest.Draft7(`"allOf":[`+strings.TrimSuffix(strings.Repeat(one+",", 64), ",")+`]`), long)
			})
			limit(t, err)
			assert.Less(t, n, uint64(64<<20), "allocated %d MiB", n>>20)
		})
	}
	for _, name := range []string{"idn-email", "idn-hostname", "no-such-format"} {
		assert.NoError(t, shapeCheck(t, shapetest.Draft7(`"format":"`+name+`"`), `"\u0000"`), "%s is not asserted", name)
		assert.NoError(t, shapeCheck(t, shapetest.Draft7(`"allOf":[`+strings.TrimSuffix(strings.Repeat(`{"format":"`+name+`"},`, 64), ",")+`]`), long))
	}
}

// BenchmarkShapeFormatRegex measures what a format "regex" costs with the
// bound (docs/performance.md, "Shapes: format assertions"): a 4 MiB value
// refused through Evaluate, one worst-case 1 KiB regex, and sixteen of
// them (just within shape.MaxWork).
func BenchmarkShapeFormatRegex(b *testing.B) {
	b.Run("4MiB refused", func(b *testing.B) {
		value := `"` + strings.Repeat("(a)", 4<<20/3-1) + `"`
		f := newFixture(b, fakebackend.Return(okOutcome(value)), nil)
		call := Call{Script: f.addr, Input: 1, Shape: json.RawMessage(shapetest.Draft7(`"format":"regex"`))}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := f.e.Evaluate(context.Background(), call); !errors.Is(err, ErrLimitExceeded) {
				b.Fatal(err)
			}
		}
	})
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("%d worst 1KiB", n), func(b *testing.B) {
			s, err := compileShape([]byte(shapetest.Draft7(`"items":{"format":"regex"}`)))
			require.NoError(b, err)
			v, err := canon.Decode([]byte(jsonArray(n, `"`+worstRegex(1008)+`"`)))
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				if err := s.validate(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
