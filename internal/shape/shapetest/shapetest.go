// Package shapetest builds the JSON Schema shapes the tests of the shape
// cost analysis (internal/shape) and of the effect's shape checks share:
// chains of $defs that multiply the work a value meets, a realistic large
// schema, and draft-07 wrappers. It is for tests only.
package shapetest

import (
	"fmt"
	"strings"
)

// RefChain is a shape of n $defs, each applying the next one branches
// times through comb: a value meets branches^n subschemas.
func RefChain(n int, comb string, branches int) string {
	var b strings.Builder
	b.WriteString(`{"$defs":{`)
	for i := range n {
		fmt.Fprintf(&b, `"d%d":{"%s":[`, i, comb)
		for j := range branches {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"$ref":"#/$defs/d%d"}`, i+1)
		}
		b.WriteString(`]},`)
	}
	fmt.Fprintf(&b, `"d%d":{"type":"integer"}},"$ref":"#/$defs/d0"}`, n)
	return b.String()
}

// IfChain is a shape of n $defs whose if, then and else each apply the
// next one.
func IfChain(n int) string {
	var b strings.Builder
	b.WriteString(`{"$defs":{`)
	for i := range n {
		fmt.Fprintf(&b, `"d%d":{"if":{"$ref":"#/$defs/d%d"},"then":{"$ref":"#/$defs/d%d"},"else":{"$ref":"#/$defs/d%d"}},`, i, i+1, i+1, i+1)
	}
	fmt.Fprintf(&b, `"d%d":{"type":"integer"}},"$ref":"#/$defs/d0"}`, n)
	return b.String()
}

// DepChain is a shape of n $defs whose dependentSchemas apply the next
// one twice, for properties a and b.
func DepChain(n int) string {
	var b strings.Builder
	b.WriteString(`{"$defs":{`)
	for i := range n {
		fmt.Fprintf(&b, `"d%d":{"dependentSchemas":{"a":{"$ref":"#/$defs/d%d"},"b":{"$ref":"#/$defs/d%d"}}},`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `"d%d":{}},"$ref":"#/$defs/d0"}`, n)
	return b.String()
}

// OpenAPILike is a realistic large schema: an object of 50 properties
// (strings, enums, numbers with bounds, nested arrays of objects), $defs
// shared through $ref, and a recursive tree.
func OpenAPILike() string {
	var b strings.Builder
	b.WriteString(`{"$defs":{` +
		`"status":{"enum":["active","inactive","pending","deleted","archived"]},` +
		`"money":{"type":"object","required":["amount","currency"],"properties":{"amount":{"type":"number","minimum":0},"currency":{"enum":["EUR","USD","GBP","JPY","CHF"]}},"additionalProperties":false},` +
		`"node":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}},` +
		`"address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"},"zip":{"type":"string","pattern":"^[0-9]{5}$"}},"required":["city"]}` +
		`},"type":"object","required":["id","status"],"properties":{`)
	for i := range 50 {
		if i > 0 {
			b.WriteString(",")
		}
		switch i % 6 {
		case 0:
			fmt.Fprintf(&b, `"p%d":{"type":"string","maxLength":100}`, i)
		case 1:
			fmt.Fprintf(&b, `"p%d":{"$ref":"#/$defs/status"}`, i)
		case 2:
			fmt.Fprintf(&b, `"p%d":{"type":"array","items":{"type":"array","items":{"$ref":"#/$defs/money"}}}`, i)
		case 3:
			fmt.Fprintf(&b, `"p%d":{"oneOf":[{"$ref":"#/$defs/address"},{"type":"null"}]}`, i)
		case 4:
			fmt.Fprintf(&b, `"p%d":{"$ref":"#/$defs/node"}`, i)
		default:
			fmt.Fprintf(&b, `"p%d":{"type":"integer","minimum":0,"maximum":1000}`, i)
		}
	}
	b.WriteString(`,"id":{"type":"string"},"status":{"$ref":"#/$defs/status"}},"additionalProperties":false}`)
	return b.String()
}

// Draft7 is a draft-07 shape (format is an assertion there) of body, the
// members of its root object.
func Draft7(body string) string {
	return `{"$schema":"http://json-schema.org/draft-07/schema#",` + body + `}`
}
