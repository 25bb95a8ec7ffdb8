// Package jsonstr writes a JSON string literal the way encoding/json does
// with HTML escaping off, without reflection or allocation beyond the
// destination's growth.
//
// It is for the project's own hot paths that build JSON text by hand: the
// effect's canonical form (object keys and strings) and the guest payload
// of internal/wasm/guest (the script line of every run). One copy of the
// escaping rules serves both.
package jsonstr
