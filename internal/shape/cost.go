package shape

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/sandbank/sandbank/internal/canon"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxCost bounds the schema checks one part of a value (the value
// itself, an item, a property's value, at any depth) may meet under a
// shape, with every $ref unfolded and every subschema an applicator
// (allOf, anyOf, oneOf, not, if/then/else, dependentSchemas) may try
// counted; an enum or a const value counts 4, a required name 1, a
// pattern 1 per 64 bytes of its text, and a property name the patterns of
// patternProperties it is matched against. A shape past it is an invalid call
// (effect.ErrInvalidShape), refused before any value meets it. Ordinary schemas,
// an OpenAPI-like object of dozens of properties with enums and nested
// arrays among them, need tens; a schema that doubles through applicators
// and $ref needs 2^depth (docs/RATIONALE.md, R29).
const MaxCost = 1 << 13

// MaxWork bounds the schema checks of one value against its shape:
// the sum, over the parts of the value, of what each part meets (as
// MaxCost counts it) times its weight (1, plus one per 64 bytes of a
// string or a property name; a number the square of its length and its
// exponent over 64; an array under uniqueItems its length, and its length
// squared over 64 when its items are arrays or objects), plus what the
// format assertions a string (or a property name) meets do with it: one
// per 8 bytes for each format but "regex", 256 per byte for "regex" (the
// string is parsed as a regular expression), and a string longer than
// 1 KiB that "regex" is asserted on is past the limit. A value past it is
// limitExceeded (output), refused before the check: a check of 2^22 visits
// takes seconds (docs/RATIONALE.md, R29), and a 4 MiB array of two
// million numbers under {"items":{"type":"number"}} needs half of it.
const MaxWork = 1 << 22

// formatByteWork and regexByteWork are what a format assertion costs per
// byte of the string it meets, in 1/64 of a check: every format the
// validator asserts but "regex" is linear in the string (at most about
// 0.2 µs and 17 bytes allocated per byte), while "regex" compiles the
// string as a Go regular expression, whose parse alone takes up to 0.4 ms
// and 10 KB per byte (case folding of a wide class, a Unicode class
// repeated; docs/RATIONALE.md, R29). maxRegexFormatBytes bounds the string
// a "regex" format is asserted on, so that no single parse holds more than
// about 10 MB.
const (
	formatByteWork      = 64 / 8
	regexByteWork       = 64 * 256
	maxRegexFormatBytes = 1 << 10
)

// maxShapeStates bounds the distinct sets of subschemas (with their
// multiplicity) a part of a value may meet under one shape,
// maxShapeClosure the subschemas the cost analysis keeps in all, and
// maxShapeSteps the analysis's own steps: they keep the analysis bounded
// (milliseconds), whatever the schema; no ordinary schema comes near them.
const (
	maxShapeStates  = 4096
	maxShapeClosure = 1 << 18
	maxShapeSteps   = 1 << 22
)

// The reasons Analyse refuses a shape. Their messages are the invalid
// calls' that package effect returns (it wraps them as ErrInvalidShape).
var (
	ErrTooCostly = errors.New("effect: invalid shape (a part of a value may need more than the cost limit of " + strconv.Itoa(MaxCost) + " schema checks, with every $ref unfolded)")
	ErrTooVaried = errors.New("effect: invalid shape (bounding its cost needs more than the analysis limit of " + strconv.Itoa(maxShapeStates) + " sets of subschemas or " + strconv.Itoa(maxShapeSteps) + " steps)")
	ErrRefCycle  = errors.New("effect: invalid shape (a $ref cycle that never descends into the value)")
)

// WorkReason is the reason of the limitExceeded (output) failure of a
// value whose check would pass MaxWork.
var WorkReason = "the result needs more than the work limit of " + strconv.Itoa(MaxWork) + " schema checks against the shape"

// noState is the state of a part of a value no subschema applies to.
const noState = -1

// shapeState is one set of subschemas a part of a value may meet: what
// checking a part against it costs, and the state each of its children
// meets.
type shapeState struct {
	cost    int64 // schema checks, at most MaxCost
	keyCost int64 // pattern matches of a property name (patternProperties)
	unique  bool  // one of them has uniqueItems
	formats int64 // format assertions but "regex" a string meets
	regexes int64 // "regex" format assertions a string meets

	props  map[string]int32 // a property's value, by name
	other  int32            // a property's value whose name is not in props
	prefix []int32          // an item, by index
	rest   int32            // an item past prefix
}

// Cost is the cost of a compiled shape: its states, the root's
// first.
type Cost struct {
	states []shapeState
}

// Analyse computes the cost of a compiled schema: the states the parts
// of a value may meet, each within MaxCost. It refuses a schema past
// the limit, one with an in-place $ref cycle and one with more than
// maxShapeStates states. Its own work is bounded by those caps: closures
// are memoised per subschema and multiplicities saturate.
//
// anchors are the subschemas that declare a $dynamicAnchor or a
// $recursiveAnchor: a $dynamicRef or $recursiveRef may resolve to one that
// nothing else reaches (an outer resource's $defs), so each is counted as
// a target of every such reference.
func Analyse(root *jsonschema.Schema, anchors []*jsonschema.Schema) (*Cost, error) {
	a := &analysis{index: map[*jsonschema.Schema]int32{}, seen: map[string]int32{}}
	a.collect(root)
	for _, s := range anchors {
		a.collect(s)
	}
	a.closures = make([]map[int32]int64, len(a.nodes))
	a.costs = make([]int64, len(a.nodes))
	a.mark = make([]int8, len(a.nodes))
	rootID := a.index[root]
	if _, err := a.closure(rootID); err != nil {
		return nil, err
	}
	c := &Cost{}
	start := []entry{{rootID, 1}}
	a.seen[stateKey(start)] = 0
	queue := [][]entry{start}
	for i := 0; i < len(queue); i++ {
		st, err := a.expand(queue[i], &queue)
		if err != nil {
			return nil, err
		}
		c.states = append(c.states, st)
	}
	return c, nil
}

// entry is a subschema a part of a value meets, n times.
type entry struct {
	id int32
	n  int64
}

// analysis is the state of Analyse.
type analysis struct {
	nodes []*jsonschema.Schema
	index map[*jsonschema.Schema]int32

	closures []map[int32]int64 // subschemas met in place, with multiplicity
	costs    []int64           // checks of a closure
	mark     []int8            // 1 while a closure is computed, 2 once done
	kept     int               // closure entries kept, at most maxShapeClosure
	steps    int               // steps taken, at most maxShapeSteps

	seen map[string]int32 // state key → state number
}

// satAdd and satMul saturate just past MaxCost: any count past it
// is refused, so no count needs to be larger.
func satAdd(a, b int64) int64 { return min(a+b, MaxCost+1) }
func satMul(a, b int64) int64 {
	if a > MaxCost || b > MaxCost {
		return MaxCost + 1
	}
	return min(a*b, MaxCost+1)
}

// collect numbers every subschema reachable from s.
func (a *analysis) collect(s *jsonschema.Schema) {
	stack := []*jsonschema.Schema{s}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if s == nil {
			continue
		}
		if _, ok := a.index[s]; ok {
			continue
		}
		a.index[s] = int32(len(a.nodes))
		a.nodes = append(a.nodes, s)
		stack = append(stack, inPlace(s)...)
		stack = append(stack, descents(s)...)
		stack = append(stack, s.RecursiveRef)
		if s.DynamicRef != nil {
			stack = append(stack, s.DynamicRef.Ref)
		}
	}
}

// dynamic lists the targets of s's $dynamicRef and $recursiveRef, once
// each: the static target and every subschema that anchors the reference
// (conservative: the validator picks one of them, by the scopes it passed
// through, so a recursion through several anchors of one name counts
// each of them at every level).
func (a *analysis) dynamic(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	if d := s.DynamicRef; d != nil {
		out = append(out, d.Ref)
		for _, t := range a.nodes {
			if d.Anchor != "" && t.DynamicAnchor == d.Anchor && t != d.Ref {
				out = append(out, t)
			}
		}
	}
	if r := s.RecursiveRef; r != nil {
		out = append(out, r)
		for _, t := range a.nodes {
			if t.RecursiveAnchor && t != r {
				out = append(out, t)
			}
		}
	}
	return out
}

// inPlace lists the subschemas s applies to the same part of the value,
// but for the targets of $dynamicRef and $recursiveRef (dynamic).
func inPlace(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.Ref, s.Not, s.If, s.Then, s.Else}
	out = append(out, s.AllOf...)
	out = append(out, s.AnyOf...)
	out = append(out, s.OneOf...)
	for _, k := range sortedKeys(s.DependentSchemas) {
		out = append(out, s.DependentSchemas[k])
	}
	for _, k := range sortedKeys(s.Dependencies) {
		if d, ok := s.Dependencies[k].(*jsonschema.Schema); ok {
			out = append(out, d)
		}
	}
	return out
}

// descents lists the subschemas s applies to the parts of the value.
func descents(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.PropertyNames, s.UnevaluatedProperties, s.Contains, s.Items2020, s.UnevaluatedItems}
	for _, k := range sortedKeys(s.Properties) {
		out = append(out, s.Properties[k])
	}
	for _, p := range patterns(s) {
		out = append(out, p)
	}
	if ap, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
		out = append(out, ap)
	}
	out = append(out, s.PrefixItems...)
	switch it := s.Items.(type) {
	case *jsonschema.Schema:
		out = append(out, it)
	case []*jsonschema.Schema:
		out = append(out, it...)
	}
	if ai, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
		out = append(out, ai)
	}
	return out
}

// patterns lists the subschemas of s's patternProperties.
func patterns(s *jsonschema.Schema) []*jsonschema.Schema {
	out := make([]*jsonschema.Schema, 0, len(s.PatternProperties))
	for _, p := range s.PatternProperties {
		out = append(out, p)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// weight is what checking one part of a value against s alone costs.
func weight(s *jsonschema.Schema) int64 {
	w := int64(1) + int64(len(s.Required)) +
		int64(len(s.DependentRequired)) + int64(len(s.Dependencies)) + int64(len(s.DependentSchemas))
	// A pattern's match costs its length times the string's (the string's
	// share is the part's weight): one per 64 bytes of the pattern.
	if s.Pattern != nil {
		w += 1 + int64(len(s.Pattern.String()))/64
	}
	// Comparing a value with an enum's or a const's value costs several
	// visits per part of it (numbers are compared as exact rationals,
	// parsed at each comparison).
	if s.Enum != nil {
		for _, e := range s.Enum.Values {
			w = satAdd(w, schemaValueWeight(e))
		}
	}
	if s.Const != nil {
		w = satAdd(w, schemaValueWeight(*s.Const))
	}
	// A bound or a multipleOf is compared with every number as an exact
	// rational: its cost grows with the size of both (the number's share is
	// the part's weight), faster than linearly.
	for _, r := range []*big.Rat{s.Minimum, s.Maximum, s.ExclusiveMinimum, s.ExclusiveMaximum, s.MultipleOf} {
		if r != nil {
			size := int64(r.Num().BitLen()+r.Denom().BitLen()) / 212 // 64 decimal digits
			w = satAdd(w, satAdd(1, satMul(size, size)))
		}
	}
	return min(w, MaxCost+1)
}

// schemaValueWeight is what comparing a value with v (an enum's or a
// const's value) may cost: 4 per part of v, more for a long string or
// number.
func schemaValueWeight(v any) int64 {
	switch v := v.(type) {
	case []any:
		w := int64(4)
		for _, item := range v {
			w = satAdd(w, schemaValueWeight(item))
		}
		return w
	case map[string]any:
		w := int64(4)
		for _, item := range v {
			w = satAdd(w, schemaValueWeight(item))
		}
		return w
	case string:
		return satAdd(4, int64(len(v))/64)
	case json.Number:
		return satAdd(4, min(numberWeight(string(v)), MaxCost))
	}
	return 4
}

// closure computes, once per subschema, the subschemas it applies in place
// (itself included) with their multiplicity, and their cost. An in-place
// cycle is refused: the validator would stop at it with an error.
func (a *analysis) closure(id int32) (map[int32]int64, error) {
	switch a.mark[id] {
	case 1:
		return nil, ErrRefCycle
	case 2:
		return a.closures[id], nil
	}
	a.mark[id] = 1
	s := a.nodes[id]
	m := map[int32]int64{id: 1}
	cost := weight(s)
	subs := append(inPlace(s), a.dynamic(s)...)
	for _, sub := range subs {
		if sub == nil {
			continue
		}
		sid := a.index[sub]
		cm, err := a.closure(sid)
		if err != nil {
			return nil, err
		}
		if a.steps += len(cm); a.steps > maxShapeSteps {
			return nil, ErrTooVaried
		}
		for t, n := range cm {
			m[t] = satAdd(m[t], n)
		}
		cost = satAdd(cost, a.costs[sid])
		if cost > MaxCost {
			return nil, ErrTooCostly
		}
	}
	a.kept += len(m)
	if a.kept > maxShapeClosure {
		return nil, ErrTooVaried
	}
	a.closures[id], a.costs[id], a.mark[id] = m, cost, 2
	return m, nil
}

// expand builds the state of the entries es: its cost, and the state each
// child meets (numbered, queued when new).
func (a *analysis) expand(es []entry, queue *[][]entry) (shapeState, error) {
	// Everything es meets in place, with multiplicity.
	met := map[int32]int64{}
	var cost int64
	for _, e := range es {
		cm, err := a.closure(e.id)
		if err != nil {
			return shapeState{}, err
		}
		if a.steps += len(cm); a.steps > maxShapeSteps {
			return shapeState{}, ErrTooVaried
		}
		for t, n := range cm {
			met[t] = satAdd(met[t], satMul(n, e.n))
		}
		cost = satAdd(cost, satMul(a.costs[e.id], e.n))
	}
	if cost > MaxCost {
		return shapeState{}, ErrTooCostly
	}
	ids := make([]int32, 0, len(met))
	for t := range met {
		ids = append(ids, t)
	}
	slices.Sort(ids)

	st := shapeState{cost: cost}
	names := map[string]bool{}
	prefix := 0
	for _, t := range ids {
		s := a.nodes[t]
		st.unique = st.unique || s.UniqueItems
		if s.Format != nil {
			if s.Format.Name == "regex" {
				st.regexes = satAdd(st.regexes, met[t])
			} else {
				st.formats = satAdd(st.formats, met[t])
			}
		}
		for re := range s.PatternProperties {
			st.keyCost = satAdd(st.keyCost, satMul(met[t], 1+int64(len(re.String()))/64))
		}
		for k := range s.Properties {
			names[k] = true
		}
		prefix = max(prefix, len(s.PrefixItems))
		if it, ok := s.Items.([]*jsonschema.Schema); ok {
			prefix = max(prefix, len(it))
		}
	}
	if satAdd(st.cost, st.keyCost) > MaxCost {
		return shapeState{}, ErrTooCostly
	}
	var err error
	next := func(child func(s *jsonschema.Schema, add func(*jsonschema.Schema))) int32 {
		if err != nil {
			return noState
		}
		out := map[int32]int64{}
		for _, t := range ids {
			n := met[t]
			child(a.nodes[t], func(c *jsonschema.Schema) {
				a.steps++
				if c != nil {
					out[a.index[c]] = satAdd(out[a.index[c]], n)
				}
			})
		}
		if a.steps > maxShapeSteps {
			err = ErrTooVaried
			return noState
		}
		var id int32
		id, err = a.state(out, queue)
		return id
	}
	// A property's value meets its properties entry, or additionalProperties
	// when it has none, and (counted always) every pattern,
	// unevaluatedProperties and propertyNames.
	objChild := func(name string, named bool) func(*jsonschema.Schema, func(*jsonschema.Schema)) {
		return func(s *jsonschema.Schema, add func(*jsonschema.Schema)) {
			if p, ok := s.Properties[name]; ok && named {
				add(p)
			} else if ap, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
				add(ap)
			}
			for _, p := range patterns(s) {
				add(p)
			}
			add(s.UnevaluatedProperties)
			add(s.PropertyNames)
		}
	}
	// An item meets its prefixItems (or items array) entry, or what
	// applies past them, and contains and unevaluatedItems.
	arrChild := func(i int) func(*jsonschema.Schema, func(*jsonschema.Schema)) {
		return func(s *jsonschema.Schema, add func(*jsonschema.Schema)) {
			if i < len(s.PrefixItems) {
				add(s.PrefixItems[i])
			} else {
				add(s.Items2020)
			}
			switch it := s.Items.(type) {
			case *jsonschema.Schema:
				add(it)
			case []*jsonschema.Schema:
				if i < len(it) {
					add(it[i])
				} else if ai, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
					add(ai)
				}
			}
			add(s.Contains)
			add(s.UnevaluatedItems)
		}
	}
	if len(names) > 0 {
		st.props = make(map[string]int32, len(names))
		for _, k := range sortedKeys(names) {
			st.props[k] = next(objChild(k, true))
		}
	}
	st.other = next(objChild("", false))
	for i := range prefix {
		st.prefix = append(st.prefix, next(arrChild(i)))
	}
	st.rest = next(arrChild(prefix))
	return st, err
}

// state numbers the state of the entries m, queueing it when new.
func (a *analysis) state(m map[int32]int64, queue *[][]entry) (int32, error) {
	if len(m) == 0 {
		return noState, nil
	}
	es := make([]entry, 0, len(m))
	for id, n := range m {
		es = append(es, entry{id, n})
	}
	slices.SortFunc(es, func(x, y entry) int { return int(x.id) - int(y.id) })
	key := stateKey(es)
	if id, ok := a.seen[key]; ok {
		return id, nil
	}
	if len(*queue) >= maxShapeStates {
		return noState, ErrTooVaried
	}
	id := int32(len(*queue))
	a.seen[key] = id
	*queue = append(*queue, es)
	return id, nil
}

// stateKey is the map key of sorted entries.
func stateKey(es []entry) string {
	b := make([]byte, 0, len(es)*8)
	for _, e := range es {
		b = binary.AppendUvarint(b, uint64(e.id))
		b = binary.AppendUvarint(b, uint64(e.n))
	}
	return string(b)
}

// work reports whether checking v against the shape stays within
// MaxWork: the sum over v's parts of their state's cost times their
// weight. It stops as soon as the sum passes the limit.
func (c *Cost) Work(v any) bool {
	total := int64(0)
	return c.walk(0, v, 0, &total)
}

// walk adds the work of checking v (the value of a property named by key
// bytes, 0 for an item or the root) against state id to total.
func (c *Cost) walk(id int32, v any, key int64, total *int64) bool {
	if id == noState {
		return true
	}
	st := &c.states[id]
	w := 1 + key/64
	// What the format assertions do with the string and the property's
	// name (a propertyNames subschema is counted in the value's state).
	if st.formats > 0 || st.regexes > 0 {
		s, _ := v.(string)
		n := int64(len(s))
		if st.regexes > 0 && max(n, key) > maxRegexFormatBytes {
			return false
		}
		*total += (st.formats*formatByteWork + st.regexes*regexByteWork) * (n + key) / 64
		if *total > MaxWork {
			return false
		}
	}
	switch v := v.(type) {
	case string:
		w += int64(len(v)) / 64
	case json.Number:
		w += numberWeight(string(v))
	case []any:
		if st.unique && len(v) > 20 {
			// santhosh hashes the items of a large array to find duplicates;
			// its hash of an array or object can be made to collide, which
			// makes the search quadratic.
			// Comparing two colliding items usually stops at their first
			// part: about 1/64 of a visit.
			w += int64(len(v))
			if slices.ContainsFunc(v, isContainer) {
				w += min(int64(len(v))*int64(len(v))/64, MaxWork+1)
			}
		}
	}
	*total += min(w, MaxWork+1) * st.cost
	if *total > MaxWork {
		return false
	}
	switch v := v.(type) {
	case []any:
		for i, item := range v {
			next := st.rest
			if i < len(st.prefix) {
				next = st.prefix[i]
			}
			if !c.walk(next, item, 0, total) {
				return false
			}
		}
	case map[string]any:
		for k, item := range v {
			*total += st.keyCost * (1 + min(int64(len(k))/64, MaxWork))
			if *total > MaxWork {
				return false
			}
			next, ok := st.props[k]
			if !ok {
				next = st.other
			}
			if !c.walk(next, item, int64(len(k)), total) {
				return false
			}
		}
	}
	return true
}

func isContainer(v any) bool {
	switch v.(type) {
	case []any, map[string]any:
		return true
	}
	return false
}

// numberWeight is the weight of a number: the validator turns it into an
// exact rational whose size grows with its digits and its exponent, and
// the arithmetic on it faster than linearly (a 1e999999 takes about 0.1 s
// to compare, R29).
func numberWeight(n string) int64 {
	size := int64(len(n))
	if i := strings.IndexAny(n, "eE"); i >= 0 {
		exp := strings.TrimLeft(n[i+1:], "+-")
		if len(exp) > 9 {
			return MaxWork + 1
		}
		e, _ := strconv.ParseInt(exp, 10, 64)
		size += e
	}
	return (size / 64) * (size / 64)
}

// AnchorPointers lists the JSON Pointers of the objects of doc (a decoded
// shape) that declare a $dynamicAnchor or a $recursiveAnchor.
func AnchorPointers(doc any) []string {
	var out []string
	var walk func(v any, ptr string)
	walk = func(v any, ptr string) {
		switch v := v.(type) {
		case map[string]any:
			_, dyn := v["$dynamicAnchor"]
			_, rec := v["$recursiveAnchor"]
			if dyn || rec {
				out = append(out, ptr)
			}
			for _, k := range sortedKeys(v) {
				walk(v[k], ptr+"/"+canon.PointerToken(k))
			}
		case []any:
			for i, item := range v {
				walk(item, ptr+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(doc, "")
	return out
}

// pointerEscaper escapes a JSON Pointer token (RFC 6901).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")
