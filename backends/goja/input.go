package goja

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	js "github.com/dop251/goja"
)

// The input is converted from JSON text to a JavaScript value here, in Go,
// rather than by goja's JSON.parse: goja's refuses a number too large for
// a float64 ("1e400", valid JSON) where JavaScript reads Infinity, as the
// QuickJS backend does. The conversion keeps its own stack, so the input's
// depth costs no Go stack (the depth is still bounded, by MaxNesting, as
// QuickJS bounds it).

// stopCheckEvery is how many tokens the conversion reads between checks
// for a stop (the context cancelled while a large input is converted).
const stopCheckEvery = 4096

// errInputStopped: the run was stopped while its input was converted.
var errInputStopped = errors.New("goja: stopped while converting the input")

// frame is an array or object being built.
type frame struct {
	obj    *js.Object // an object; nil for an array
	items  []js.Value // an array's items
	key    string     // an object's pending key
	hasKey bool
}

// decodeJSON returns the JavaScript value of the JSON text in, as
// JSON.parse would build it: numbers as float64 (beyond its range,
// ±Infinity), objects with every key an own data property ("__proto__"
// included), the last of duplicate keys winning. stopped is asked now and
// then; when it reports true the conversion ends with errInputStopped.
func decodeJSON(rt *js.Runtime, in string, stopped func() bool) (js.Value, error) {
	d := json.NewDecoder(strings.NewReader(in))
	d.UseNumber()
	var stack []*frame
	var done js.Value
	for n := 0; ; n++ {
		if n%stopCheckEvery == stopCheckEvery-1 && stopped() {
			return nil, errInputStopped
		}
		tok, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("goja: the input is not JSON: %w", err)
		}
		var v js.Value
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '[':
				stack = append(stack, &frame{})
				continue
			case '{':
				stack = append(stack, &frame{obj: rt.NewObject()})
				continue
			default: // ']' or '}': the decoder checked they match
				top := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if top.obj != nil {
					v = top.obj
				} else {
					v = rt.NewArray(anys(top.items)...)
				}
			}
		case string:
			if len(stack) > 0 {
				if top := stack[len(stack)-1]; top.obj != nil && !top.hasKey {
					top.key, top.hasKey = t, true
					continue
				}
			}
			v = rt.ToValue(t)
		case json.Number:
			f, err := strconv.ParseFloat(string(t), 64)
			if err != nil && !(errors.Is(err, strconv.ErrRange) && math.IsInf(f, 0)) {
				return nil, fmt.Errorf("goja: the input has a bad number: %w", err)
			}
			v = rt.ToValue(f)
		case bool:
			v = rt.ToValue(t)
		case nil:
			v = js.Null()
		}
		if len(stack) == 0 {
			done = v
			break
		}
		top := stack[len(stack)-1]
		if top.obj == nil {
			top.items = append(top.items, v)
			continue
		}
		if err := top.obj.DefineDataProperty(top.key, v, js.FLAG_TRUE, js.FLAG_TRUE, js.FLAG_TRUE); err != nil {
			return nil, fmt.Errorf("goja: setting an input key: %w", err)
		}
		top.hasKey = false
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("goja: the input has data after its value")
	}
	return done, nil
}
