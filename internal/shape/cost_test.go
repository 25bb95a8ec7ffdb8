package shape

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/sandbank/sandbank/internal/canon"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compile compiles schema as package effect compiles a call's shape
// (effect/shape.go: bounded first, every external reference refused) and
// analyses its cost.
func compile(schema []byte) (*jsonschema.Schema, *Cost, error) {
	if len(schema) > 16<<10 {
		return nil, nil, errors.New("too large")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, nil, err
	}
	const resource = "sandbank:///shape.json"
	c := jsonschema.NewCompiler()
	c.UseLoader(refuse{})
	if err := c.AddResource(resource, doc); err != nil {
		return nil, nil, err
	}
	sch, err := c.Compile(resource)
	if err != nil {
		return nil, nil, err
	}
	var anchors []*jsonschema.Schema
	for _, ptr := range AnchorPointers(doc) {
		a, err := c.Compile(resource + "#" + (&url.URL{Fragment: ptr}).EscapedFragment())
		if err != nil {
			return nil, nil, err
		}
		anchors = append(anchors, a)
	}
	cost, err := Analyse(sch, anchors)
	return sch, cost, err
}

type refuse struct{}

func (refuse) Load(string) (any, error) { return nil, errors.New("no external schemas") }

// FuzzCost: the cost analysis never panics and terminates on any
// shape; a shape it passes has every state within MaxCost and every
// transition to a state it has; the work bound terminates on any value,
// and a value within it is checked without a panic.
func FuzzCost(f *testing.F) {
	for _, s := range []string{
		`{}`, `true`, `false`, `{"type":"string"}`,
		refChain(3, "anyOf", 2), refChain(12, "oneOf", 2), ifChain(4), depChain(4), openAPILike(),
		`{"$defs":{"n":{"items":{"allOf":[{"$ref":"#/$defs/n"},{"$ref":"#/$defs/n"}]}}},"$ref":"#/$defs/n"}`,
		`{"$defs":{"n":{"properties":{"l":{"$ref":"#/$defs/n"},"r":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"}`,
		`{"$dynamicAnchor":"n","items":{"$dynamicRef":"#n"}}`,
		`{"$schema":"https://json-schema.org/draft/2019-09/schema","$recursiveAnchor":true,"items":{"$recursiveRef":"#"}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"$ref":"#"},{}],"additionalItems":{"$ref":"#"},"dependencies":{"a":{"$ref":"#"}}}`,
		`{"prefixItems":[{"$ref":"#"}],"contains":{"minimum":1},"uniqueItems":true,"patternProperties":{"^a":{"$ref":"#"}},"propertyNames":{"maxLength":3}}`,
		`{"allOf":[{"$ref":"#"}]}`,
		draft7(`"items":{"format":"regex"},"propertyNames":{"format":"ipv4"}`),
	} {
		f.Add([]byte(s), []byte(`[1,{"a":[2,"x"],"l":{"r":{}}},1e5]`))
	}
	f.Fuzz(func(t *testing.T, schema, value []byte) {
		sch, c, err := compile(schema)
		if err != nil {
			return
		}
		n := int32(len(c.states))
		in := func(id int32) bool { return id == noState || (id >= 0 && id < n) }
		for _, st := range c.states {
			if st.cost < 1 || st.cost > MaxCost {
				t.Fatalf("a state costs %d", st.cost)
			}
			ok := in(st.other) && in(st.rest)
			for _, id := range st.props {
				ok = ok && in(id)
			}
			for _, id := range st.prefix {
				ok = ok && in(id)
			}
			if !ok {
				t.Fatal("a transition to no state")
			}
		}
		v, err := canon.Decode(value)
		if err != nil || len(value) > 1<<10 || !c.Work(v) {
			return
		}
		defer func() { _ = recover() }() // a number the validator cannot represent
		_ = sch.Validate(v)
	})
}

// refChain is a shape of n $defs, each applying the next one branches
// times through comb: a value meets branches^n subschemas.
func refChain(n int, comb string, branches int) string {
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

// ifChain is a shape of n $defs whose if, then and else each apply the
// next one.
func ifChain(n int) string {
	var b strings.Builder
	b.WriteString(`{"$defs":{`)
	for i := range n {
		fmt.Fprintf(&b, `"d%d":{"if":{"$ref":"#/$defs/d%d"},"then":{"$ref":"#/$defs/d%d"},"else":{"$ref":"#/$defs/d%d"}},`, i, i+1, i+1, i+1)
	}
	fmt.Fprintf(&b, `"d%d":{"type":"integer"}},"$ref":"#/$defs/d0"}`, n)
	return b.String()
}

// depChain is a shape of n $defs whose dependentSchemas apply the next
// one twice, for properties a and b.
func depChain(n int) string {
	var b strings.Builder
	b.WriteString(`{"$defs":{`)
	for i := range n {
		fmt.Fprintf(&b, `"d%d":{"dependentSchemas":{"a":{"$ref":"#/$defs/d%d"},"b":{"$ref":"#/$defs/d%d"}}},`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `"d%d":{}},"$ref":"#/$defs/d0"}`, n)
	return b.String()
}

// openAPILike is a realistic large schema: an object of 50 properties
// (strings, enums, numbers with bounds, nested arrays of objects), $defs
// shared through $ref, and a recursive tree.
func openAPILike() string {
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

// draft7 is a draft-07 shape (format is an assertion there) of body, the
// members of its root object.
func draft7(body string) string {
	return `{"$schema":"http://json-schema.org/draft-07/schema#",` + body + `}`
}
