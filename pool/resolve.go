package pool

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/registry"
)

// ErrNotAllowed is matched by Resolve's refusal of an engine, or of every
// engine of a language, that the caller may not use. It matches
// effect.ErrInvalidCall too (the HTTP door answers it 403).
var ErrNotAllowed error = &sentinel{"pool: engine not allowed"}

// errNoEngine is a request that names neither an engine nor a language.
var errNoEngine = invalidf(effect.ErrInvalidCall, "pool: an engine or a language is required")

// sentinel is an error of this package that matches effect.ErrInvalidCall.
type sentinel struct{ msg string }

func (s *sentinel) Error() string { return s.msg }
func (s *sentinel) Unwrap() error { return effect.ErrInvalidCall }

// invalidError is one refusal: its own text, matching kind.
type invalidError struct {
	msg  string
	kind error
}

func (e *invalidError) Error() string { return e.msg }
func (e *invalidError) Unwrap() error { return e.kind }

func invalidf(kind error, format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...), kind: kind}
}

// Resolve returns the engine that runs a request naming engine and
// language, for a caller that may use only the engines in allowed (none:
// every engine). It is the one policy of every door:
//
//   - an engine named: that engine, which must run language when language
//     is given too, and must be allowed;
//   - a language only: the language's default engine (the registry's
//     Default); a caller restricted to some engines gets the first allowed
//     engine of the language, trying the default first and then the others
//     in engine-name order;
//   - neither: an invalid call.
//
// Every refusal matches effect.ErrInvalidCall; an unknown engine or
// language matches registry.ErrUnknownEngine or registry.ErrUnknownLanguage
// too, and an engine the caller may not use, ErrNotAllowed. What the caller
// named is quoted as an excerpt (effect.Excerpt).
func (p *Pool) Resolve(engine, language string, allowed ...string) (registry.Entry, error) {
	return resolve(p.reg, engine, language, allowed)
}

func resolve(reg *registry.Registry, engine, language string, allowed []string) (registry.Entry, error) {
	may := func(name string) bool { return len(allowed) == 0 || slices.Contains(allowed, name) }
	switch {
	case engine != "":
		e, err := reg.Lookup(engine)
		if err != nil {
			return registry.Entry{}, invalidLookup(err)
		}
		if language != "" && language != e.Language {
			return registry.Entry{}, invalidf(effect.ErrInvalidCall, "pool: engine %s runs %s, not %s",
				e.Engine, e.Language, strconv.Quote(effect.Excerpt(language)))
		}
		if !may(e.Engine) {
			return registry.Entry{}, invalidf(ErrNotAllowed, "pool: engine %s is not allowed (allowed: %s)", e.Engine, list(allowed))
		}
		return e, nil
	case language != "":
		def, err := reg.Default(language)
		if err != nil {
			return registry.Entry{}, invalidLookup(err)
		}
		if may(def.Engine) {
			return def, nil
		}
		for _, e := range reg.ByLanguage(language) {
			if may(e.Engine) {
				return e, nil
			}
		}
		return registry.Entry{}, invalidf(ErrNotAllowed, "pool: no allowed engine runs %s (allowed: %s)", language, list(allowed))
	}
	return registry.Entry{}, errNoEngine
}

// lookupError is a registry lookup's error as an invalid call: its text is
// the registry's (which names what is registered), and it matches both the
// registry's sentinel and effect.ErrInvalidCall.
type lookupError struct{ err error }

func (e *lookupError) Error() string   { return e.err.Error() }
func (e *lookupError) Unwrap() []error { return []error{e.err, effect.ErrInvalidCall} }

func invalidLookup(err error) error {
	if errors.Is(err, effect.ErrInvalidCall) {
		return err
	}
	return &lookupError{err: err}
}

// list joins names for a message, each an excerpt, at most eight of them.
func list(names []string) string {
	const most = 8
	var out []string
	for i, n := range names {
		if i == most {
			out = append(out, fmt.Sprintf("and %d more", len(names)-most))
			break
		}
		out = append(out, effect.Excerpt(n))
	}
	return strings.Join(out, ", ")
}
