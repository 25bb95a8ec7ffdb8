package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/receipt"
)

type verifyOptions struct {
	record, inputFile string
	input             jsonFlag
	key, keys         string
}

func (a *app) verifyCommand() *cobra.Command {
	var o verifyOptions
	cmd := &cobra.Command{
		Use:   "verify --record FILE [flags] SCRIPT",
		Short: "Check a stored run record against its script and input",
		Long: `verify checks a stored run record against the script and the input it
claims to have run, without running anything: the script's content
address, the input's digest (sha256 of its canonical JSON), and, when the
record holds the value, the value's canonical form and digest and that
the outcome agrees with the value or the failure. It also checks the
record against itself, field by field (receipt.Verify): the outcome is ok,
a failure code, infrastructure or canceled; the output digest is present
exactly when the outcome has an output; the limit kind is one of the
limit kinds, present exactly when the outcome is limitExceeded (or
inputTooLarge); the failure carries only its code's fields; the engine,
versions, capabilities, limits, start and duration are well formed. A
record that proves nothing does not verify.

The record is what "sandbank run --json" printed (the whole object), an
effect.Record stored as JSON, or a bare receipt ("sandbank run --receipt
FILE"), for which only the script and the input are checked. It must read
one way only (receipt.DecodeRecord, receipt.DecodeReceipt): a file with a
key twice, a name that is not exactly one of the format's (another case
included) or a value written another way than the record writes it does
not verify, since other JSON readers would see something else.

The input is --input (JSON text) or the contents of --input-file, as
given to run; without either it is null.

A receipt may be signed by the host that ran the script ("sandbank run
--sign-key", "sandbank serve"). With --key FILE (a public key of
"sandbank keygen") or --keys DIR (its *.pub files; a "Retired:" header
dates a retired key) or --keys FILE.json (the document a server
publishes at /.well-known/sandbank-keys), the receipt must be signed by
one of those keys: an unsigned receipt, an unknown key, a signature that
does not hold (a field changed after signing) or a key retired before
the run started does not verify. Without them the signature is not
checked, and the output says whether the receipt is signed: a receipt
verified without a key proves only that it is consistent.

Exit codes: 0 the record verifies; 2 it does not (each disagreement is
one line on stderr, naming the field); 64 an invalid request (unreadable
files, a file that is not a JSON record or receipt).`,
		Example: `  sandbank run --json --input '{"n":2}' double.js > run.json
  sandbank verify --record run.json --input '{"n":2}' double.js
  sandbank verify --key host.pub --record run.json --input '{"n":2}' double.js
  sandbank run --receipt receipt.json double.js && sandbank verify --record receipt.json double.js`,
		Args: cobra.ExactArgs(1),
		RunE: wrap(func(cmd *cobra.Command, args []string) error {
			return a.verify(&o, args[0])
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.record, "record", "", "the stored record or receipt, JSON `FILE` (required)")
	f.Var(&o.input, "input", "the run's input as `JSON` text (default null)")
	f.StringVar(&o.inputFile, "input-file", "", "read the run's input (JSON text) from `FILE`")
	f.StringVar(&o.key, "key", "", "require a signature by the public key in `FILE`")
	f.StringVar(&o.keys, "keys", "", "require a signature by a key in `DIR` (*.pub) or in a published keys JSON file")
	return cmd
}

// errDoesNotVerify is the exit of a record that does not verify; the
// disagreements were printed.
var errDoesNotVerify = errors.New("the record does not verify")

func (a *app) verify(o *verifyOptions, scriptFile string) error {
	if o.record == "" {
		return usagef("--record FILE is required")
	}
	var opts []receipt.VerifyOption
	switch {
	case o.key != "" && o.keys != "":
		return usagef("--key and --keys cannot be used together")
	case o.key != "" || o.keys != "":
		flag, path := "--key", o.key
		if o.keys != "" {
			flag, path = "--keys", o.keys
		}
		ks, err := receipt.ReadKeys(path)
		if err != nil {
			return usagef("%s %s: %s", flag, effect.Excerpt(path), reason(err))
		}
		opts = append(opts, receipt.WithKeys(ks), receipt.RequireSignature())
	}
	input := json.RawMessage("null")
	switch {
	case o.input.set && o.inputFile != "":
		return usagef("--input and --input-file cannot be used together")
	case o.input.set:
		if err := checkJSON([]byte(o.input.text)); err != nil {
			return usagef("--input: %v", err)
		}
		input = json.RawMessage(o.input.text)
	case o.inputFile != "":
		b, err := readFileBounded(o.inputFile)
		if err != nil {
			return usagef("--input-file: %v", err)
		}
		if err := checkJSON(b); err != nil {
			return usagef("--input-file %s: %v", o.inputFile, err)
		}
		input = b
	}
	script, err := readFileBounded(scriptFile)
	if err != nil {
		return usagef("cannot read script: %v", err)
	}
	stored, err := readFileBounded(o.record)
	if err != nil {
		return usagef("--record: %v", err)
	}
	rec, receiptOnly, err := parseRecord(stored)
	switch {
	case errors.Is(err, receipt.ErrRecordMismatch):
	case err != nil:
		return usagef("--record %s: %v", o.record, err)
	case receiptOnly:
		err = receipt.VerifyReceipt(rec.Receipt, script, input, opts...)
	default:
		err = receipt.Verify(rec, script, input, opts...)
	}
	if err != nil {
		for _, line := range bytes.Split([]byte(err.Error()), []byte("\n")) {
			fmt.Fprintf(a.stderr, "sandbank: %s\n", line)
		}
		return &exitError{code: exitFailure, err: errDoesNotVerify, quiet: true}
	}
	r := rec.Receipt
	fmt.Fprintf(a.stdout, "verified: script %s, input %s, outcome %s", r.Script, r.InputDigest, r.Outcome)
	if !receiptOnly && r.OutputDigest != "" {
		fmt.Fprintf(a.stdout, ", output %s", r.OutputDigest)
	}
	fmt.Fprintf(a.stdout, " (engine %s)", r.Engine)
	switch {
	case r.Signature == nil:
		fmt.Fprintf(a.stdout, "; unsigned: consistent, but nobody vouches for it\n")
	case len(opts) > 0:
		fmt.Fprintf(a.stdout, "; signed by key %s\n", r.Signature.KeyID)
	default:
		fmt.Fprintf(a.stdout, "; signature by key %s not checked (give --key or --keys)\n", effect.Excerpt(r.Signature.KeyID))
	}
	return nil
}

// parseRecord reads what verify was given: run --json's object (its
// failure flattened into it), an effect.Record, or a bare receipt
// (receiptOnly), through the effect's strict decoders (DecodeRecord,
// DecodeReceipt): text that reads two ways is an error matching
// receipt.ErrRecordMismatch.
func parseRecord(b []byte) (rec *effect.Record, receiptOnly bool, err error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, false, fmt.Errorf("not a JSON object: %v", err)
	}
	if _, ok := top["receipt"]; ok {
		rec, err := receipt.DecodeRecord(b)
		return rec, false, err
	}
	if _, ok := top["format"]; !ok {
		return nil, false, errors.New(`neither a record (no "receipt") nor a receipt (no "format")`)
	}
	r, err := receipt.DecodeReceipt(b)
	if err != nil {
		return nil, true, err
	}
	return &effect.Record{Receipt: r}, true, nil
}
