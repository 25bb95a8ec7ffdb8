package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandbank/sandbank/builtin"
	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/registry"
)

// cgoEngines are the built-in engines that only a build with cgo has.
var cgoEngines = []string{"quickjs-wasmtime"}

// lookupEngine is registry.Lookup with the command line's wording: an
// engine that needs cgo, asked for in a build without it, is said to be
// missing from this build; any other unknown name lists what exists.
// Both are usage errors.
func lookupEngine(reg *registry.Registry, name string) (registry.Entry, error) {
	e, err := reg.Lookup(name)
	if err == nil {
		return e, nil
	}
	if errors.Is(err, registry.ErrUnknownEngine) {
		return registry.Entry{}, unknownEngine(reg, name, buildHasCgo)
	}
	return registry.Entry{}, usagef("%v", err)
}

func unknownEngine(reg *registry.Registry, name string, hasCgo bool) error {
	if !hasCgo && slices.Contains(cgoEngines, name) {
		return usagef("engine %s is not in this build: it needs cgo (this binary was built with CGO_ENABLED=0; rebuild it with CGO_ENABLED=1 and a C compiler)", quote(name))
	}
	for _, m := range builtin.Missing() {
		if m.Engine == name {
			return usagef("engine %s is not available on this machine: %s", quote(name), m.Reason)
		}
	}
	return usagef("unknown engine %s (engines: %s; see 'sandbank engines')", quote(name), strings.Join(engineNames(reg), ", "))
}

// resolveError words pool.Pool.Resolve's refusal of engine and lang as
// the command line does: an unknown engine as lookupEngine does, an
// unknown language with the list of languages; a usage error either way.
func resolveError(reg *registry.Registry, engine, lang string, err error) error {
	switch {
	case errors.Is(err, registry.ErrUnknownEngine):
		return unknownEngine(reg, engine, buildHasCgo)
	case errors.Is(err, registry.ErrUnknownLanguage):
		for _, m := range builtin.Missing() {
			if m.Language == lang {
				return usagef("language %s is not available on this machine: %s", quote(lang), m.Reason)
			}
		}
		return usagef("unknown language %s (languages: %s)", quote(lang), strings.Join(reg.Languages(), ", "))
	}
	return usagef("%s", strings.TrimPrefix(err.Error(), "pool: "))
}

func engineNames(reg *registry.Registry) []string {
	var names []string
	for _, e := range reg.Engines() {
		names = append(names, e.Engine)
	}
	return names
}

// Shell completion of flag values.

// completeEngines completes an engine name from the registry.
func (a *app) completeEngines(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	reg, err := a.newRegistry()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var out []string
	for _, e := range reg.Engines() {
		out = append(out, e.Engine+"\t"+e.Language)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeLanguages completes a language name from the registry.
func (a *app) completeLanguages(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	reg, err := a.newRegistry()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	return reg.Languages(), cobra.ShellCompDirectiveNoFileComp
}

// completeCases completes a conformance case name.
func completeCases(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return conformance.CaseNames(), cobra.ShellCompDirectiveNoFileComp
}

// formatCobraError folds one of cobra's own errors onto one line. Cobra
// writes suggestions on lines of their own ("unknown command \"runn\" for
// \"sandbank\"\n\nDid you mean this?\n\trun\n"); they become
// `unknown command "runn" for "sandbank" (did you mean "run"?)`.
func formatCobraError(msg string) string {
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	head := strings.TrimSpace(lines[0])
	var suggestions, rest []string
	inSuggestions := false
	for _, l := range lines[1:] {
		t := strings.TrimSpace(l)
		switch {
		case t == "":
		case strings.HasPrefix(t, "Did you mean this?"):
			inSuggestions = true
		case inSuggestions && strings.HasPrefix(l, "\t"):
			suggestions = append(suggestions, fmt.Sprintf("%q", t))
		default:
			inSuggestions = false
			rest = append(rest, t)
		}
	}
	if len(suggestions) > 0 {
		head += " (did you mean " + strings.Join(suggestions, " or ") + "?)"
	}
	if len(rest) > 0 {
		head += "; " + strings.Join(rest, "; ")
	}
	return head
}
