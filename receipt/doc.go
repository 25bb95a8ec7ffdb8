// Package receipt signs, keeps keys for and verifies the receipts of
// package effect's runs.
//
// An effect signs each run's [effect.Receipt] with the [effect.Signer] of
// its options; [Ed25519Signer] is one held in memory ([NewEd25519Signer],
// [GenerateEd25519Signer]), read from or written to PEM key files
// ([ReadSignerFile], [ReadOrCreateSignerFile], [WriteKeyFiles]). A
// verifier trusts public keys ([TrustedKey], [KeySet]: current, or retired
// from a date on), read from files, a directory or the JSON document a
// host publishes ([ReadKeys], [PublishedKeys]).
//
// [Verify] checks a stored [effect.Record] against the script and the
// input it claims to have run, and against itself, field by field;
// [VerifyReceipt] checks a receipt alone. With [WithKeys] they check the
// signature too. [DecodeRecord] and [DecodeReceipt] read stored text
// strictly, refusing JSON that reads two ways. See docs/record.md.
//
// A key that is not an Ed25519 key is the caller's mistake: its error
// matches effect.ErrInvalidKey (and effect.ErrInvalidCall). Every error of
// a record that does not verify matches [ErrRecordMismatch].
//
// The messages of its errors keep the "effect:" prefix they had before
// receipts left package effect, so what the command line prints and what
// records hold stays byte for byte as it was.
package receipt
