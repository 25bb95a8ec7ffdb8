package record_test

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

func ExampleAddressOf() {
	fmt.Println(record.AddressOf([]byte("export default 1")))
	// Output: sha256:f2ed650f15f224fa0836d26fabb81f0e219e1e3515d41640040073b222ffcbfd
}

// A receipt's signature covers its canonical JSON with the signature's
// value left out (SignedBytes); anyone holding the public key checks it.
func ExampleReceipt_SignedBytes() {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)) // an example key: never a zero seed
	pub := key.Public().(ed25519.PublicKey)
	r := record.Receipt{
		Format: record.ReceiptFormat,
		Script: record.AddressOf([]byte("export default 1")),
		Engine: "example",
		Capabilities: spi.Capabilities{Language: "example", Network: spi.NetworkNone,
			WallClock: spi.WallClockHard, FreshPerRun: true},
		Outcome: record.OutcomeOK,
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Signature: &record.Signature{
			Algorithm: record.SignatureEd25519,
			KeyID:     record.KeyIDOf(pub),
		},
	}
	msg, err := r.SignedBytes()
	if err != nil {
		panic(err)
	}
	r.Signature.Value = ed25519.Sign(key, msg)

	// The checker recomputes the signed bytes from the receipt it holds.
	again, _ := r.SignedBytes()
	fmt.Println("key:", r.Signature.KeyID)
	fmt.Println("verifies:", ed25519.Verify(pub, again, r.Signature.Value))
	r.Outcome = "scriptError" // tampered
	again, _ = r.SignedBytes()
	fmt.Println("tampered verifies:", ed25519.Verify(pub, again, r.Signature.Value))
	// Output:
	// key: 139e3940e64b5491722088d9a0d74162
	// verifies: true
	// tampered verifies: false
}

// A receipt's outcome is OutcomeOK, OutcomeInfrastructure,
// OutcomeCanceled or a typed failure's code; its limit kind, a limit
// kind's name.
func ExampleCodeNamed() {
	for _, outcome := range []string{"limitExceeded", record.OutcomeOK, "teapot"} {
		c, ok := record.CodeNamed(outcome)
		fmt.Println(outcome, c, ok)
	}
	k, ok := record.LimitKindNamed("wallClock")
	fmt.Println(k == record.LimitWallClock, ok)
	// Output:
	// limitExceeded limitExceeded true
	// ok Code(0) false
	// teapot Code(0) false
	// true true
}

// A host call's outcome is written by name in JSON, and only a defined
// one is written at all.
func ExampleHostCallOutcome() {
	b, _ := json.Marshal(record.HostCall{Name: "rates", Issued: time.Millisecond, BytesIn: 2, Outcome: record.HostCallOK})
	fmt.Println(string(b))
	_, err := json.Marshal(record.HostCall{Name: "rates"})
	fmt.Println(err != nil)
	// Output:
	// {"name":"rates","issuedNs":1000000,"bytesIn":2,"outcome":"ok"}
	// true
}
