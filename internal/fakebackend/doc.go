// Package fakebackend is a scriptable spi.Backend for Sandbank's own tests:
// the effect's, the conformance kit's and the command line's. It is not a
// sandbox and runs no script.
//
// A [Backend] answers each Evaluate with a [Behavior], a plain
// func(ctx, req) (spi.Outcome, error), so a test can return any outcome
// (including malformed ones), any Go error (including a typed effect failure,
// without this package importing package effect), block, panic or return
// late. Canned behaviours cover the usual cases: [Return], [Fail], [Panic],
// [Echo], [BlockUntil], [LateAfterCancel], [PanicAfterCancel]. The backend
// counts calls and returns, records the last request (copied), and lets a
// test change its declared capabilities after construction, or make
// Capabilities panic, to prove that the effect kept its own snapshot.
//
// [Backend] implements spi.Warmer and io.Closer; [Backend.Plain] hides both.
package fakebackend
