// Package record holds the plain data a finished run leaves behind: the
// parts of an effect.Record and the receipt that package receipt signs
// and verifies.
//
// Package effect runs scripts and returns an effect.Record; this package
// is the vocabulary that record is written in, kept below effect so that a
// store, a door or a verifier can read and check records without the
// machinery that makes them (as database/sql/driver holds what
// database/sql's drivers speak):
//
//   - [Receipt] ties a result to the script ([Address], [AddressOf]), the
//     input, the engine and the [ReceiptLimits] that produced it, and to
//     its files ([FileRef]); its canonical JSON ([Receipt.Canonical]) is
//     what a [Signer] signs ([Receipt.SignedBytes], [Signature]).
//   - [Stats], [LogLine], [LogsCut] and [HostCall] are the figures, the
//     log and the host calls of the run; [HostLogDigest] digests a durable
//     run's host calls for its receipt.
//   - [Code] and [LimitKind] are the closed sets a typed failure
//     (effect.Failure) and a receipt's outcome are drawn from, with
//     [OutcomeOK], [OutcomeInfrastructure] and [OutcomeCanceled].
//
// Everything here is plain data: it encodes to JSON with encoding/json
// and decodes back equal; fields are only ever added, and the JSON names
// never change (receipts are signed over them).
package record
