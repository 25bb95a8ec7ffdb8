package shape

import (
	"bytes"
	"errors"
	"net/url"
	"testing"

	"github.com/sandbank/sandbank/internal/canon"
	"github.com/sandbank/sandbank/internal/shape/shapetest"
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
		shapetest.RefChain(3, "anyOf", 2), shapetest.RefChain(12, "oneOf", 2), shapetest.IfChain(4), shapetest.DepChain(4), shapetest.OpenAPILike(),
		`{"$defs":{"n":{"items":{"allOf":[{"$ref":"#/$defs/n"},{"$ref":"#/$defs/n"}]}}},"$ref":"#/$defs/n"}`,
		`{"$defs":{"n":{"properties":{"l":{"$ref":"#/$defs/n"},"r":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"}`,
		`{"$dynamicAnchor":"n","items":{"$dynamicRef":"#n"}}`,
		`{"$schema":"https://json-schema.org/draft/2019-09/schema","$recursiveAnchor":true,"items":{"$recursiveRef":"#"}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"$ref":"#"},{}],"additionalItems":{"$ref":"#"},"dependencies":{"a":{"$ref":"#"}}}`,
		`{"prefixItems":[{"$ref":"#"}],"contains":{"minimum":1},"uniqueItems":true,"patternProperties":{"^a":{"$ref":"#"}},"propertyNames":{"maxLength":3}}`,
		`{"allOf":[{"$ref":"#"}]}`,
		shapetest.Draft7(`"items":{"format":"regex"},"propertyNames":{"format":"ipv4"}`),
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
