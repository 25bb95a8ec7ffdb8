package registry

// defaultRegistry is the registry behind the package-level functions.
var defaultRegistry Registry

// Register adds an engine to the default registry; see [Registry.Register]
// for when it panics.
func Register(e Entry) { defaultRegistry.Register(e) }

// Lookup returns the named engine of the default registry; see
// [Registry.Lookup].
func Lookup(engine string) (Entry, error) { return defaultRegistry.Lookup(engine) }

// Engines returns every entry of the default registry, sorted by engine
// name.
func Engines() []Entry { return defaultRegistry.Engines() }

// Languages returns the languages of the default registry, sorted.
func Languages() []string { return defaultRegistry.Languages() }

// ByLanguage returns the default registry's entries of language, sorted by
// engine name.
func ByLanguage(language string) []Entry { return defaultRegistry.ByLanguage(language) }

// SetDefault sets the default engine of language in the default registry;
// see [Registry.SetDefault].
func SetDefault(language, engine string) error { return defaultRegistry.SetDefault(language, engine) }

// Default returns the default engine of language in the default registry;
// see [Registry.Default].
func Default(language string) (Entry, error) { return defaultRegistry.Default(language) }

// Select chooses an engine of language meeting req from the default
// registry; see [Registry.Select].
func Select(language string, req Requirements) (Entry, error) {
	return defaultRegistry.Select(language, req)
}
