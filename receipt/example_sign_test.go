package receipt_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// A host signs its receipts with its key; anyone holding the public key
// checks who vouches for the run, and a receipt changed after signing
// (here, a made-up value with its digest recomputed) no longer verifies.
func Example_signer() {
	signer, err := receipt.GenerateEd25519Signer() // or receipt.ReadSignerFile("host.key")
	if err != nil {
		panic(err)
	}
	scripts := new(storage.MemoryStore)
	script := []byte("log; log; maybe fail")
	addr, _ := scripts.Put(script)
	e, err := effect.New(scripts, chatty{}, &effect.Options{Engine: "chatty", Signer: signer})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	input := map[string]bool{"fail": false}
	rec, _ := e.Run(context.Background(), effect.Call{Script: addr, Input: input})
	fmt.Println("signed by the host's key:", rec.Receipt.Signature.KeyID == record.KeyIDOf(signer.PublicKey()))

	key := receipt.WithKey(signer.PublicKey())
	fmt.Println("verify:", receipt.Verify(rec, script, input, key, receipt.RequireSignature()))

	forged := *rec
	forged.Value = json.RawMessage(`{"done":false}`)
	sum := sha256.Sum256(forged.Value)
	forged.Receipt.OutputDigest = "sha256:" + hex.EncodeToString(sum[:])
	fmt.Println("forged, consistent:", receipt.Verify(&forged, script, input))
	err = receipt.Verify(&forged, script, input, key)
	fmt.Println("forged, with the key:", errors.Is(err, receipt.ErrBadSignature))
	// Output:
	// signed by the host's key: true
	// verify: <nil>
	// forged, consistent: <nil>
	// forged, with the key: true
}

// Keys are trusted with their retirement dates: a receipt signed by a key
// retired before its run started is stale.
func ExampleWithKeys() {
	signer, _ := receipt.GenerateEd25519Signer()
	scripts := new(storage.MemoryStore)
	script := []byte("script")
	addr, _ := scripts.Put(script)
	e, _ := effect.New(scripts, chatty{}, &effect.Options{Engine: "chatty", Signer: signer})
	defer e.Close()
	rec, _ := e.Run(context.Background(), effect.Call{Script: addr})

	retired := rec.Receipt.Started.Add(-time.Hour)
	keys, err := receipt.NewKeySet(receipt.TrustedKey{PublicKey: signer.PublicKey(), Retired: retired})
	if err != nil {
		panic(err)
	}
	err = receipt.Verify(rec, script, nil, receipt.WithKeys(keys))
	var se *receipt.SignatureError
	fmt.Println(errors.As(err, &se), se.Reason)

	// An unsigned receipt verifies for consistency only, unless a
	// signature is required.
	rec.Receipt.Signature = nil
	fmt.Println(receipt.Verify(rec, script, nil, receipt.WithKeys(keys)))
	fmt.Println(receipt.Verify(rec, script, nil, receipt.WithKeys(keys), receipt.RequireSignature()))
	// Output:
	// true effect: the receipt is signed by a retired key
	// <nil>
	// effect: record does not verify: the receipt is not signed
}

// A stored receipt is read with DecodeReceipt, which refuses text that
// reads two ways: here a forged "outcome" before the genuine one under
// another case, which encoding/json would read as the signed receipt.
func ExampleDecodeReceipt() {
	signer, _ := receipt.GenerateEd25519Signer()
	scripts := new(storage.MemoryStore)
	script := []byte("log; log; maybe fail")
	addr, _ := scripts.Put(script)
	e, _ := effect.New(scripts, chatty{}, &effect.Options{Engine: "chatty", Signer: signer})
	defer e.Close()
	input := map[string]bool{"fail": false}
	rec, _ := e.Run(context.Background(), effect.Call{Script: addr, Input: input})
	stored, _ := rec.Receipt.Canonical()

	r, err := receipt.DecodeReceipt(stored)
	fmt.Println(err, receipt.VerifyReceipt(r, script, input, receipt.WithKey(signer.PublicKey())))

	forged := bytes.Replace(stored, []byte(`"outcome":"ok"`), []byte(`"outcome":"scriptError","Outcome":"ok"`), 1)
	_, err = receipt.DecodeReceipt(forged)
	fmt.Println(errors.Is(err, receipt.ErrRecordMismatch))
	// Output:
	// <nil> <nil>
	// true
}

// chatty is an example backend that logs a line, then fails when
// input.fail is true.
type chatty struct{}

func (chatty) Capabilities() spi.Capabilities {
	return spi.Capabilities{Language: "example", Network: spi.NetworkNone, WallClock: spi.WallClockHard, FreshPerRun: true, Logs: true}
}

func (chatty) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	var in struct{ Fail bool }
	_ = json.Unmarshal(req.Input, &in)
	req.Log(spi.LevelInfo, spi.StreamStdout, "starting")
	if in.Fail {
		return spi.Threw("Error", "it failed"), nil
	}
	return spi.OK(json.RawMessage(`{"done":true}`)), nil
}
