package registry

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/spi"
)

// Entry describes one registered engine.
type Entry struct {
	// Engine is the engine's unique name, such as "quickjs" or "goja".
	Engine string
	// Language is the script language the engine runs, such as
	// "javascript". It must equal Capabilities.Language.
	Language string
	// Capabilities is the engine's declaration, as its backend returns it.
	// Select chooses by it without constructing a backend.
	Capabilities spi.Capabilities
	// Factory makes a new backend of this engine.
	Factory spi.Factory
	// Description is one line for humans, such as the command line's
	// engine list. Optional.
	Description string
}

// Errors returned by lookups, matchable with errors.Is. The error text
// itself names what was asked for (an excerpt of it: effect.Excerpt) and
// what is registered.
var (
	// ErrUnknownEngine: no engine of that name is registered.
	ErrUnknownEngine = errors.New("registry: unknown engine")
	// ErrUnknownLanguage: no engine of that language is registered.
	ErrUnknownLanguage = errors.New("registry: unknown language")
	// ErrNoMatch: engines of the language exist, but none meets the
	// requirements.
	ErrNoMatch = errors.New("registry: no engine meets the requirements")
)

// lookupError carries a message naming the registered alternatives and
// unwraps to one of the sentinels above.
type lookupError struct {
	msg  string
	kind error
}

func (e *lookupError) Error() string { return e.msg }
func (e *lookupError) Unwrap() error { return e.kind }

// Registry maps engine names to entries. The zero value is an empty
// registry ready to use; a Registry is safe for concurrent use and must not
// be copied after first use.
type Registry struct {
	mu       sync.RWMutex
	entries  map[string]Entry  // engine → entry
	first    map[string]string // language → first engine registered for it
	defaults map[string]string // language → engine set with SetDefault
}

// New returns an empty Registry. It is equivalent to new(Registry).
func New() *Registry { return new(Registry) }

// Register adds an engine. It panics when e.Engine or e.Language is empty,
// e.Factory is nil, e.Capabilities is invalid, e.Language differs from
// e.Capabilities.Language, or an engine of the same name is already
// registered: each is a programmer error, found at start-up.
func (r *Registry) Register(e Entry) {
	switch {
	case e.Engine == "":
		panic("registry: Register called with an empty engine name")
	case e.Language == "":
		panic(fmt.Sprintf("registry: Register called with an empty language for engine %q", e.Engine))
	case e.Factory == nil:
		panic(fmt.Sprintf("registry: Register factory is nil for engine %q", e.Engine))
	}
	if err := e.Capabilities.Validate(); err != nil {
		msg := strings.ReplaceAll(err.Error(), "\n", "; ")
		panic(fmt.Sprintf("registry: Register called with invalid capabilities for engine %q: %s", e.Engine, msg))
	}
	if e.Language != e.Capabilities.Language {
		panic(fmt.Sprintf("registry: Register called for engine %q with language %q but capabilities for %q",
			e.Engine, e.Language, e.Capabilities.Language))
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.entries[e.Engine]; dup {
		panic(fmt.Sprintf("registry: Register called twice for engine %q", e.Engine))
	}
	if r.entries == nil {
		r.entries = make(map[string]Entry)
		r.first = make(map[string]string)
	}
	r.entries[e.Engine] = e
	if _, ok := r.first[e.Language]; !ok {
		r.first[e.Language] = e.Engine
	}
}

// Lookup returns the entry of the named engine. An unknown name is an error
// (matching ErrUnknownEngine) that lists the registered engines.
func (r *Registry) Lookup(engine string) (Entry, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[engine]
	if !ok {
		return Entry{}, r.unknownEngineLocked(engine)
	}
	return e, nil
}

// Engines returns every entry, sorted by engine name.
func (r *Registry) Engines() []Entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Entry, 0, len(r.entries))
	for _, e := range r.entries {
		out = append(out, e)
	}
	sortEntries(out)
	return out
}

// Languages returns the languages that have at least one engine, sorted.
func (r *Registry) Languages() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.languagesLocked()
}

// ByLanguage returns the entries of language, sorted by engine name; none
// for a language with no engine.
func (r *Registry) ByLanguage(language string) []Entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byLanguageLocked(language)
}

// SetDefault makes engine the default of language. It fails when language
// has no engine, engine is not registered, or engine runs another language.
func (r *Registry) SetDefault(language, engine string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.first[language]; !ok {
		return r.unknownLanguageLocked(language)
	}
	e, ok := r.entries[engine]
	if !ok {
		return r.unknownEngineLocked(engine)
	}
	if e.Language != language {
		return fmt.Errorf("registry: engine %q runs %q, not %q", engine, e.Language, language)
	}
	if r.defaults == nil {
		r.defaults = make(map[string]string)
	}
	r.defaults[language] = engine
	return nil
}

// Default returns the default engine of language: the one set with
// SetDefault, else the first registered for it. A language with no engine
// is an error (matching ErrUnknownLanguage) that lists the registered
// languages.
func (r *Registry) Default(language string) (Entry, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	name, ok := r.defaultLocked(language)
	if !ok {
		return Entry{}, r.unknownLanguageLocked(language)
	}
	return r.entries[name], nil
}

// Select returns the first engine of language that meets every requirement
// in req, trying the language's default first and then the others in
// engine-name order. When none qualifies, the error (matching ErrNoMatch)
// names each candidate, in engine-name order, and what it lacks. A language with no engine is an
// error matching ErrUnknownLanguage; requirements holding a value outside
// spi's closed sets are refused.
func (r *Registry) Select(language string, req Requirements) (Entry, error) {
	if err := req.Validate(); err != nil {
		return Entry{}, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	def, ok := r.defaultLocked(language)
	if !ok {
		return Entry{}, r.unknownLanguageLocked(language)
	}
	candidates := []Entry{r.entries[def]}
	for _, e := range r.byLanguageLocked(language) {
		if e.Engine != def {
			candidates = append(candidates, e)
		}
	}
	for _, e := range candidates {
		if len(req.Shortfalls(e.Capabilities)) == 0 {
			return e, nil
		}
	}
	// Nothing qualifies: say why, in engine-name order so the text is
	// stable whichever engine is the default.
	sortEntries(candidates)
	reasons := make([]string, 0, len(candidates))
	for _, e := range candidates {
		reasons = append(reasons, e.Engine+" lacks "+strings.Join(req.Shortfalls(e.Capabilities), ", "))
	}
	return Entry{}, &lookupError{
		msg:  fmt.Sprintf("registry: no %q engine meets the requirements: %s", language, strings.Join(reasons, "; ")),
		kind: ErrNoMatch,
	}
}

func (r *Registry) defaultLocked(language string) (string, bool) {
	if name, ok := r.defaults[language]; ok {
		return name, true
	}
	name, ok := r.first[language]
	return name, ok
}

func (r *Registry) languagesLocked() []string {
	out := make([]string, 0, len(r.first))
	for lang := range r.first {
		out = append(out, lang)
	}
	slices.Sort(out)
	return out
}

func (r *Registry) byLanguageLocked(language string) []Entry {
	var out []Entry
	for _, e := range r.entries {
		if e.Language == language {
			out = append(out, e)
		}
	}
	sortEntries(out)
	return out
}

func (r *Registry) unknownEngineLocked(engine string) error {
	names := make([]string, 0, len(r.entries))
	for name := range r.entries {
		names = append(names, name)
	}
	slices.Sort(names)
	return &lookupError{
		msg:  fmt.Sprintf("registry: unknown engine %q (registered: %s); forgotten registration?", effect.Excerpt(engine), listOrNone(names)),
		kind: ErrUnknownEngine,
	}
}

func (r *Registry) unknownLanguageLocked(language string) error {
	return &lookupError{
		msg: fmt.Sprintf("registry: unknown language %q (registered: %s); forgotten registration?",
			effect.Excerpt(language), listOrNone(r.languagesLocked())),
		kind: ErrUnknownLanguage,
	}
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func sortEntries(es []Entry) {
	slices.SortFunc(es, func(a, b Entry) int { return strings.Compare(a.Engine, b.Engine) })
}
