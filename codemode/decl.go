package codemode

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/sandbank/sandbank/effect"
)

// This file writes the upstream tools as TypeScript declarations, from
// their JSON Schemas, for the run tools' descriptions: a model reads the
// argument types it must pass and writes a correct call the first time.
// Every bound here keeps a hostile or enormous schema from making the
// description enormous: the declarations of all upstreams together are
// at most MaxUpstreamDeclarationBytes.

// MaxUpstreamDeclarationBytes bounds the TypeScript declarations of the
// upstream tools in a run tool's description. Tools past it are counted,
// not declared.
const MaxUpstreamDeclarationBytes = 32 << 10

// The bounds of one tool's declaration.
const (
	maxToolDeclarationBytes = 4 << 10 // past it, the tool's arguments are declared as an open object
	maxTypeDepth            = 4       // nesting past it is unknown
	maxUnionMembers         = 16      // a longer enum or union is its members' base type, or unknown
	maxProperties           = 48      // an object with more properties declares the first ones and an index signature
)

// Declarations returns the TypeScript declarations of the upstream's
// tools, as the run tools' descriptions show them (see Host), within
// MaxUpstreamDeclarationBytes.
func (u *Upstream) Declarations() string { return declarations([]*Upstream{u}) }

// declarations renders the tools of ups as members of the global host,
// within MaxUpstreamDeclarationBytes.
func declarations(ups []*Upstream) string {
	const head, tail = "declare namespace host {\n", "}\n"
	var b strings.Builder
	b.WriteString(head)
	left := 0
	for _, u := range ups {
		for _, t := range u.Tools() {
			d := toolDeclaration(u, t)
			if left > 0 || b.Len()+len(d)+len(tail)+80 > MaxUpstreamDeclarationBytes {
				left++
				continue
			}
			b.WriteString(d)
		}
	}
	if left > 0 {
		b.WriteString("  // " + strconv.Itoa(left) + " more tools are not declared here, for space; they are called the same way.\n")
	}
	b.WriteString(tail)
	return b.String()
}

// toolDeclaration declares one tool as a function of the namespace host.
func toolDeclaration(u *Upstream, t UpstreamTool) string {
	var b strings.Builder
	// The tool's name is the upstream's text, as its description is:
	// defused as the description is, so that no name ends the comment.
	comment := "Tool " + commentSafe(strconv.Quote(effect.Excerpt(t.Name))) + " of upstream " + u.name + "."
	if t.Description != "" {
		comment = oneLineComment(t.Description) + " (" + comment + ")"
	}
	b.WriteString("  /** " + comment + " */\n")
	args := argsType(t.InputSchema, "  ")
	ret := "unknown"
	if t.OutputSchema != nil {
		ret = tsType(decodeSchema(t.OutputSchema), 1)
	}
	b.WriteString("  function " + t.HostName + "(args: " + args + "): Promise<" + ret + ">;\n")
	if b.Len() > maxToolDeclarationBytes {
		return "  /** " + comment + " */\n  function " + t.HostName + "(args: { [key: string]: unknown }): Promise<unknown>;\n"
	}
	return b.String()
}

// argsType declares a tool's argument object, one property a line with
// its description.
func argsType(schema json.RawMessage, indent string) string {
	s, ok := decodeSchema(schema).(map[string]any)
	if !ok {
		return "{ [key: string]: unknown }"
	}
	props, _ := s["properties"].(map[string]any)
	if len(props) == 0 {
		return tsType(s, 0)
	}
	required := requiredSet(s)
	var b strings.Builder
	b.WriteString("{\n")
	for i, name := range sortedKeys(props) {
		if i == maxProperties {
			b.WriteString(indent + "  [key: string]: unknown;\n")
			break
		}
		p := props[name]
		if pm, ok := p.(map[string]any); ok {
			if d, ok := pm["description"].(string); ok && d != "" {
				b.WriteString(indent + "  /** " + oneLineComment(d) + " */\n")
			}
		}
		b.WriteString(indent + "  " + propertyName(name, required) + ": " + tsType(p, 1) + ";\n")
	}
	b.WriteString(indent + "}")
	return b.String()
}

// decodeSchema decodes a JSON Schema, or returns nil.
func decodeSchema(schema json.RawMessage) any {
	if schema == nil {
		return nil
	}
	var v any
	if json.Unmarshal(schema, &v) != nil {
		return nil
	}
	return v
}

// tsType is the TypeScript type of a JSON Schema at a nesting depth.
func tsType(schema any, depth int) string {
	s, ok := schema.(map[string]any)
	if !ok || depth > maxTypeDepth {
		if b, ok := schema.(bool); ok && !b {
			return "never"
		}
		return "unknown"
	}
	if c, ok := s["const"]; ok {
		if lit, ok := literal(c); ok {
			return lit
		}
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 && len(e) <= maxUnionMembers {
		var lits []string
		for _, v := range e {
			lit, ok := literal(v)
			if !ok {
				lits = nil
				break
			}
			lits = append(lits, lit)
		}
		if lits != nil {
			return strings.Join(lits, " | ")
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[key].([]any); ok && len(alts) > 0 {
			if len(alts) > maxUnionMembers {
				return "unknown"
			}
			return union(alts, depth)
		}
	}
	if all, ok := s["allOf"].([]any); ok && len(all) > 0 && len(all) <= maxUnionMembers {
		var parts []string
		for _, a := range all {
			parts = append(parts, paren(tsType(a, depth+1)))
		}
		return strings.Join(parts, " & ")
	}
	switch t := s["type"].(type) {
	case string:
		return typeNamed(t, s, depth)
	case []any:
		var parts []string
		for _, x := range t {
			name, _ := x.(string)
			parts = append(parts, typeNamed(name, s, depth))
		}
		if len(parts) > 0 && len(parts) <= maxUnionMembers {
			return strings.Join(dedupe(parts), " | ")
		}
	case nil:
		if _, ok := s["properties"]; ok {
			return objectType(s, depth)
		}
	}
	return "unknown"
}

// typeNamed is the type of a schema whose "type" is name.
func typeNamed(name string, s map[string]any, depth int) string {
	switch name {
	case "string":
		return "string"
	case "number", "integer":
		return "number"
	case "boolean":
		return "boolean"
	case "null":
		return "null"
	case "array":
		if items, ok := s["items"]; ok {
			return paren(tsType(items, depth+1)) + "[]"
		}
		return "unknown[]"
	case "object":
		return objectType(s, depth)
	}
	return "unknown"
}

// objectType is an object schema's type, on one line.
func objectType(s map[string]any, depth int) string {
	props, _ := s["properties"].(map[string]any)
	var fields []string
	if len(props) > 0 {
		required := requiredSet(s)
		for i, name := range sortedKeys(props) {
			if i == maxProperties {
				fields = append(fields, "[key: string]: unknown")
				break
			}
			fields = append(fields, propertyName(name, required)+": "+tsType(props[name], depth+1))
		}
	}
	switch ap := s["additionalProperties"].(type) {
	case map[string]any:
		if len(props) == 0 {
			return "{ [key: string]: " + tsType(ap, depth+1) + " }"
		}
	case nil:
		if len(props) == 0 {
			return "{ [key: string]: unknown }"
		}
	case bool:
		if len(props) == 0 {
			if ap {
				return "{ [key: string]: unknown }"
			}
			return "{}"
		}
	}
	return "{ " + strings.Join(fields, "; ") + " }"
}

func union(alts []any, depth int) string {
	var parts []string
	for _, a := range alts {
		parts = append(parts, paren(tsType(a, depth+1)))
	}
	return strings.Join(dedupe(parts), " | ")
}

// paren puts a union or intersection in parentheses, for an array or an
// intersection of it.
func paren(t string) string {
	if strings.Contains(t, " | ") || strings.Contains(t, " & ") {
		if !strings.HasPrefix(t, "{") || !strings.HasSuffix(t, "}") {
			return "(" + t + ")"
		}
	}
	return t
}

// literal is a JSON scalar as a TypeScript literal type.
func literal(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		if len(x) > 64 {
			return "string", true
		}
		return tsString(x), true
	case float64, bool, nil:
		b, err := json.Marshal(x)
		return string(b), err == nil
	}
	return "", false
}

// tsString is s as a TypeScript string literal: scrubbed, and JSON's
// quoting, which TypeScript reads.
func tsString(s string) string {
	b, err := json.Marshal(effect.Excerpt(s))
	if err != nil {
		return `""`
	}
	return string(b)
}

// propertyName is a property's name as declared: an identifier as is,
// anything else quoted; with "?" when it is not required.
func propertyName(name string, required map[string]bool) string {
	out := name
	if !isIdentifier(name) {
		out = tsString(name)
	}
	if !required[name] {
		out += "?"
	}
	return out
}

func isIdentifier(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c == '$', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && '0' <= c && c <= '9':
		default:
			return false
		}
	}
	return true
}

func requiredSet(s map[string]any) map[string]bool {
	out := map[string]bool{}
	if r, ok := s["required"].([]any); ok {
		for _, x := range r {
			if name, ok := x.(string); ok {
				out[name] = true
			}
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func dedupe(parts []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range parts {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// oneLineComment makes an upstream's text fit in a /** */ comment on one
// line: scrubbed and cut (effect.Excerpt), line breaks as spaces, and no
// "*/" to end the comment early (commentSafe).
func oneLineComment(s string) string {
	return commentSafe(effect.Excerpt(strings.Join(strings.Fields(s), " ")))
}

// commentSafe makes one line of text safe inside a /* */ comment: every
// "*/" becomes "* /". Every text of an upstream written into a comment
// of the declarations (a tool's name, a description) goes through it.
func commentSafe(s string) string {
	return strings.ReplaceAll(s, "*/", "* /")
}
