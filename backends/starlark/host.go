package starlark

import (
	"context"
	"errors"
	"fmt"

	sl "go.starlark.net/starlark"

	"github.com/sandbank/sandbank/spi"
)

// This file gives a script its host functions (SPI 1.1), for a run whose
// request carries a broker:
//
//   - host.NAME(args) calls host function NAME with one value (or none,
//     which is null) and returns the decoded answer, synchronously. A
//     failed call is an error the script cannot catch: uncaught, the run
//     is a thrown Error whose message holds the broker's text.
//   - host_try(NAME, args) makes the same call and returns (value, None),
//     or (None, the error's message): Starlark has no try, so this is how a
//     script catches a host error.
//
// The broker checks every name, size and count; this file only converts
// (the argument with the encoder of results, the answer with the decoder
// of the input: integers stay exact). A run without host functions has
// neither name, so a script using them does not compile there.

// hostValue is the global host: every attribute is a host function.
type hostValue struct {
	call func(name string, args sl.Tuple, kwargs []sl.Tuple) (sl.Value, error)
}

var _ sl.HasAttrs = hostValue{}

func (hostValue) String() string        { return "<host>" }
func (hostValue) Type() string          { return "host" }
func (hostValue) Freeze()               {}
func (hostValue) Truth() sl.Bool        { return sl.True }
func (hostValue) Hash() (uint32, error) { return 0, errors.New("unhashable: host") }
func (hostValue) AttrNames() []string   { return nil }

func (h hostValue) Attr(name string) (sl.Value, error) {
	return sl.NewBuiltin("host."+name, func(_ *sl.Thread, _ *sl.Builtin, args sl.Tuple, kwargs []sl.Tuple) (sl.Value, error) {
		return h.call(name, args, kwargs)
	}), nil
}

// withHost adds to pre, the predeclared names of a run with host
// functions, host and host_try relaying to broker with ctx.
func (r *run) withHost(ctx context.Context, broker spi.Host, pre sl.StringDict) {
	call := func(name string, args sl.Tuple, kwargs []sl.Tuple) (sl.Value, error) {
		if len(kwargs) > 0 || len(args) > 1 {
			return nil, fmt.Errorf("host.%s takes at most one positional argument", name)
		}
		text := []byte("null")
		if len(args) == 1 {
			var err error
			if text, err = encodeResult(args[0], r.b.maxResult, &r.cause); err != nil {
				var ee *encodeError
				if errors.As(err, &ee) {
					return nil, fmt.Errorf("host.%s: the argument has no JSON form: %s", name, ee.msg)
				}
				return nil, err
			}
		}
		res, err := broker.Call(ctx, name, text)
		if err != nil {
			return nil, hostError{err.Error()}
		}
		v, err := decodeInput(res)
		if err != nil {
			return nil, fmt.Errorf("host.%s: the answer could not be converted", name)
		}
		return v, nil
	}
	pre["host"] = hostValue{call: call}
	pre["host_try"] = sl.NewBuiltin("host_try", func(_ *sl.Thread, _ *sl.Builtin, args sl.Tuple, kwargs []sl.Tuple) (sl.Value, error) {
		if len(kwargs) > 0 || len(args) < 1 || len(args) > 2 {
			return nil, errors.New("host_try takes a name and at most one argument")
		}
		name, ok := sl.AsString(args[0])
		if !ok {
			return nil, errors.New("host_try: the name must be a string")
		}
		v, err := call(name, args[1:], nil)
		var he hostError
		switch {
		case errors.As(err, &he):
			return sl.Tuple{sl.None, sl.String(he.msg)}, nil
		case err != nil:
			return nil, err
		}
		return sl.Tuple{v, sl.None}, nil
	})
}

// hostError is an error the broker returned: its text is the message.
type hostError struct{ msg string }

func (e hostError) Error() string { return e.msg }
