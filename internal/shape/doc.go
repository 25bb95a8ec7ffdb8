// Package shape bounds what checking a value against a call's JSON Schema
// (its shape) may cost, for package effect: Analyse refuses, before any
// value meets it, a compiled schema under which one part of a value may
// meet more than MaxCost schema checks, and Cost.Work refuses, before the
// check, a value whose check would pass MaxWork (docs/RATIONALE.md, R29).
package shape
