package receipt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// testScript is the script the fixtures store and run.
var testScript = []byte("input")

// fixture is an effect over a fake backend and a memory store holding
// testScript.
type fixture struct {
	e    *effect.Effect
	addr record.Address
}

func newFixture(t testing.TB, b fakebackend.Behavior, opts *effect.Options) *fixture {
	t.Helper()
	store := new(storage.MemoryStore)
	addr, err := store.Put(testScript)
	require.NoError(t, err)
	e, err := effect.New(store, fakebackend.New(fakebackend.Capabilities(), b), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return &fixture{e: e, addr: addr}
}

func okOutcome(v string) spi.Outcome { return spi.OK(json.RawMessage(v)) }

// logThen logs lines, then returns out.
func logThen(out spi.Outcome, lines ...string) fakebackend.Behavior {
	return func(ctx context.Context, req spi.Request) (spi.Outcome, error) {
		for _, l := range lines {
			req.Log(spi.LevelInfo, spi.StreamStdout, l)
		}
		return out, nil
	}
}

// callHostTwice calls the host function "f" twice, then returns ok.
func callHostTwice(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	for range 2 {
		_, _ = req.Host.Call(ctx, "f", nil)
	}
	return okOutcome(`1`), nil
}

func echoHost(_ context.Context, args json.RawMessage) (any, error) { return args, nil }

func sha(b string) string {
	s := sha256.Sum256([]byte(b))
	return "sha256:" + hex.EncodeToString(s[:])
}

// resigner signs a receipt after its run, as someone holding another
// key (a trusted one, or an attacker's) would: the signature's algorithm
// and key id, then the key's signature of the signed bytes.
type resigner struct {
	signer *Ed25519Signer
}

func (rs resigner) sign(ctx context.Context, r *record.Receipt) error {
	r.Signature = &record.Signature{Algorithm: record.SignatureEd25519, KeyID: record.KeyIDOf(rs.signer.PublicKey())}
	msg, err := r.SignedBytes()
	if err != nil {
		return err
	}
	sig, err := rs.signer.Sign(ctx, msg)
	if err != nil {
		return err
	}
	r.Signature.Value = sig
	return nil
}
