// Package canon writes the canonical form of JSON text, which the effect
// hashes and returns and which receipts digest and sign: compact, object
// keys sorted, strings re-escaped as encoding/json escapes them, numbers
// kept as written. Strict refuses an object with a key twice, for text
// that must read one way only (a stored receipt or record).
//
// Its errors keep the "effect:" prefix they had when this code was part
// of package effect: they reach a run's record as they did.
package canon
