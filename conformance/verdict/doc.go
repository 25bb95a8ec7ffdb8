// Package verdict holds what the conformance kit finds about a backend: the
// [Report], its per-case [CaseResult]s with their measured [Figure]s, and a
// [Proof] per declared capability.
//
// It is for the report's readers (a server listing its engines' verified
// capabilities, a tool printing the matrix), as log/slog is for a handler's
// users while testing/slogtest checks the handler: the kit itself, package
// conformance, imports the hostile fixtures and the machinery that runs
// them, and a program that only reads reports need not link them. Package
// conformance returns these types (by alias) from Check and Suite.
package verdict
