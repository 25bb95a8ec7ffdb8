package effect

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/sandbank/sandbank/internal/shape"
	"github.com/sandbank/sandbank/record"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxShapeDepth is the deepest nesting of arrays and objects a shape (the
// JSON text of a call's schema) may have, and MaxShapeBytes its largest
// size. A shape past either is an invalid call (ErrInvalidShape), refused
// before anything parses it: the compile time of a schema grows much faster
// than its depth and its size (docs/performance.md, "Shapes: compile time").
// Its regular expressions (the strings of "pattern" and the names of
// "patternProperties") may hold 2 KiB in all, refused before they are
// compiled: Go's regexp parse takes up to 0.4 ms per byte of a pattern.
const (
	MaxShapeDepth = 128
	MaxShapeBytes = 16 << 10
)

// maxShapePatternBytes bounds the text of a shape's regular expressions.
const maxShapePatternBytes = 2 << 10

// errShapeTooDeep, errShapeTooLarge and errShapePatterns are the invalid
// calls of a shape past MaxShapeDepth, MaxShapeBytes or
// maxShapePatternBytes.
var (
	errShapeTooDeep  = invalid(ErrInvalidShape, "effect: invalid shape (nested deeper than the depth limit of "+strconv.Itoa(MaxShapeDepth)+" levels)")
	errShapeTooLarge = invalid(ErrInvalidShape, "effect: invalid shape (larger than the size limit of "+strconv.Itoa(MaxShapeBytes)+" bytes)")
	errShapePatterns = invalid(ErrInvalidShape, "effect: invalid shape (its patterns hold more than the limit of "+strconv.Itoa(maxShapePatternBytes)+" bytes of regular expression)")
)

// maxCachedShapes bounds the compiled-schema cache of one Effect.
const maxCachedShapes = 256

// shapeResource is the URL a call's schema is compiled under. Nothing is
// ever loaded from it: the compiler's loader refuses every URL, so a schema
// cannot make the effect read a file or reach the network through $ref.
const shapeResource = "sandbank:///shape.json"

// compiledShape is a compiled JSON Schema.
type compiledShape struct {
	schema *jsonschema.Schema
	cost   *shape.Cost
}

// shapeCache compiles each distinct schema once, keyed by the SHA-256 of
// its bytes. It is safe for concurrent use and holds at most
// maxCachedShapes schemas; when full, an arbitrary entry is dropped.
type shapeCache struct {
	mu sync.RWMutex
	m  map[[sha256.Size]byte]*compiledShape
}

func (c *shapeCache) get(schema []byte) (*compiledShape, error) {
	key := sha256.Sum256(schema)
	c.mu.RLock()
	s, ok := c.m[key]
	c.mu.RUnlock()
	if ok {
		return s, nil
	}
	s, err := compileShape(schema)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[[sha256.Size]byte]*compiledShape)
	}
	if prev, ok := c.m[key]; ok {
		return prev, nil
	}
	if len(c.m) >= maxCachedShapes {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[key] = s
	return s, nil
}

// len reports how many schemas are cached.
func (c *shapeCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// refuseLoader is a jsonschema.URLLoader that loads nothing.
type refuseLoader struct{}

func (refuseLoader) Load(string) (any, error) {
	return nil, errors.New("effect: a shape may not reference external schemas")
}

// maxShapeErrorLines bounds the lines of a shape's compile error that an
// invalid-call error keeps.
const maxShapeErrorLines = 6

// shapeErrorText is a shape's compile error as an invalid call may say
// it: the error quotes the caller's schema (a pattern, a reference, a
// property name), so each of its first maxShapeErrorLines lines is an
// excerpt (Excerpt).
func shapeErrorText(err error) string {
	lines := strings.Split(errorText(err), "\n")
	if len(lines) > maxShapeErrorLines {
		lines = append(lines[:maxShapeErrorLines], "…")
	}
	for i, l := range lines {
		lines[i] = Excerpt(l)
	}
	return strings.Join(lines, "\n")
}

func compileShape(schema []byte) (s *compiledShape, err error) {
	defer func() {
		if recover() != nil {
			s, err = nil, invalid(ErrInvalidShape, "effect: invalid shape (the JSON Schema could not be compiled)")
		}
	}()
	if len(schema) > MaxShapeBytes {
		return nil, errShapeTooLarge
	}
	if tooDeep(schema, MaxShapeDepth) {
		return nil, errShapeTooDeep
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, invalid(ErrInvalidShape, "effect: invalid shape (not JSON text)")
	}
	if patternBytes(doc) > maxShapePatternBytes {
		return nil, errShapePatterns
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(shapeResource, doc); err != nil {
		return nil, invalid(ErrInvalidShape, "effect: invalid shape: "+shapeErrorText(err))
	}
	sch, err := c.Compile(shapeResource)
	if err != nil {
		return nil, invalid(ErrInvalidShape, "effect: invalid shape: "+shapeErrorText(err))
	}
	var anchors []*jsonschema.Schema
	for _, ptr := range shape.AnchorPointers(doc) {
		a, err := c.Compile(shapeResource + "#" + (&url.URL{Fragment: ptr}).EscapedFragment())
		if err != nil {
			return nil, invalid(ErrInvalidShape, "effect: invalid shape: "+shapeErrorText(err))
		}
		anchors = append(anchors, a)
	}
	cost, err := shape.Analyse(sch, anchors)
	if err != nil {
		return nil, invalid(ErrInvalidShape, err.Error())
	}
	return &compiledShape{schema: sch, cost: cost}, nil
}

// patternBytes is the length of every regular expression of doc (a
// decoded shape) that compiling it compiles (twice: checked against the
// meta-schema's format "regex", then for use): every string under a
// "pattern" key and every name under a "patternProperties" key, wherever
// they are (counting one that is data, under "const" or "enum", too).
func patternBytes(doc any) int {
	n := 0
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, item := range v {
				if s, ok := item.(string); ok && k == "pattern" {
					n += len(s)
				}
				if m, ok := item.(map[string]any); ok && k == "patternProperties" {
					for re := range m {
						n += len(re)
					}
				}
				walk(item)
			}
		case []any:
			for _, item := range v {
				walk(item)
			}
		}
	}
	walk(doc)
	return n
}

// shapeUncheckableReason is the mismatch of a value the validator panicked
// on (a number past what it can represent exactly, as 1e100000000 is).
const shapeUncheckableReason = "the value could not be checked against the shape"

// validate checks v (as decoded with json.Number) and returns a typed
// shapeMismatch carrying the first violation, bounded. A value whose check
// would pass shape.MaxWork is limitExceeded (output), refused before the
// check; a panic of the validator is a mismatch.
func (s *compiledShape) validate(v any) error {
	if !s.cost.Work(v) {
		return &Failure{Code: record.CodeLimitExceeded, Kind: record.LimitOutput, Reason: shape.WorkReason}
	}
	return s.check(v)
}

// check is validate past the work bound: the check itself, a panic of the
// validator a mismatch.
func (s *compiledShape) check(v any) (err error) {
	defer func() {
		if recover() != nil {
			err = &Failure{Code: record.CodeShapeMismatch, Reason: shapeUncheckableReason}
		}
	}()
	err = s.schema.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &Failure{Code: record.CodeShapeMismatch, Reason: boundText(err.Error())}
	}
	return &Failure{Code: record.CodeShapeMismatch, Reason: firstViolation(ve)}
}

// firstViolation describes the first leaf of a validation error tree as
// "at '/pointer': what failed", bounded.
func firstViolation(ve *jsonschema.ValidationError) string {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	leaf := *ve
	leaf.Causes = nil
	text := leaf.Error()
	// The library renders "jsonschema validation failed with '<url>'\n- at
	// '<pointer>': <message>"; keep the last line, which names the value.
	if i := strings.LastIndex(text, "\n- "); i >= 0 {
		text = text[i+3:]
	}
	return boundText(text)
}
