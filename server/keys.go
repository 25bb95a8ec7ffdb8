package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/storage"
)

// KeysPath is where the server publishes the public keys its receipts
// are signed with: GET, no API key, JSON (receipt.PublishedKeys).
const KeysPath = "/.well-known/sandbank-keys"

// signing is the server's receipt signer and the keys it publishes.
type signing struct {
	signer    record.Signer
	published receipt.PublishedKeys
}

// newSigning returns the signer of opts (the data directory's key,
// storage.SigningKeyFile, when there is none: generated on the first
// start, mode 0600 with its public key beside it, read on every later
// one, so receipts stay verifiable across restarts; else an in-memory
// key, logged by its id) and the
// document of its keys:
// the current one first, then the retired ones.
func newSigning(o *Options, dataDir string, log *slog.Logger) (*signing, error) {
	sg := &signing{signer: o.Signer}
	if sg.signer == nil && dataDir != "" {
		s, created, err := receipt.ReadOrCreateSignerFile(storage.SigningKeyFile(dataDir))
		if err != nil {
			return nil, fmt.Errorf("server: the data directory's signing key: %w", err)
		}
		sg.signer = s
		if created {
			log.Info("sandbank: generated the signing key of the data directory",
				slog.String("keyId", record.KeyIDOf(s.PublicKey())))
		}
	}
	if sg.signer == nil {
		s, err := receipt.GenerateEd25519Signer()
		if err != nil {
			return nil, err
		}
		sg.signer = s
		log.Warn("sandbank: receipts are signed by a key generated for this process only; give a key to keep one across restarts",
			slog.String("keyId", record.KeyIDOf(s.PublicKey())))
	}
	pub := sg.signer.PublicKey()
	current := receipt.TrustedKey{PublicKey: pub}
	keys := append([]receipt.TrustedKey{current}, o.RetiredKeys...)
	set, err := receipt.NewKeySet(keys...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	for _, k := range o.RetiredKeys {
		if k.Retired.IsZero() {
			return nil, fmt.Errorf("%w: a retired key has no retirement date", ErrInvalidOptions)
		}
	}
	// The current key first, then the retired ones by id.
	currentID := record.KeyIDOf(pub)
	for _, k := range set.Keys() {
		if k.KeyID == currentID {
			sg.published.Keys = append([]receipt.TrustedKey{k}, sg.published.Keys...)
		} else {
			sg.published.Keys = append(sg.published.Keys, k)
		}
	}
	return sg, nil
}

type keysOutput struct {
	CacheControl string `header:"Cache-Control"`
	Body         receipt.PublishedKeys
}

// registerKeys declares GET KeysPath.
func (s *Server) registerKeys(api huma.API) {
	huma.Register(api, huma.Operation{
		OperationID: "publishedKeys", Method: http.MethodGet, Path: KeysPath,
		Summary:     "The keys receipts are signed with",
		Description: "The public keys that sign this server's receipts (receipt.signature names one by keyId): the current key, then the retired ones with the date from which they no longer sign. A verifier trusts these (sandbank verify --keys FILE.json) and refuses a receipt signed by a key retired before its run started.",
		Responses:   map[string]*huma.Response{},
	}, func(context.Context, *struct{}) (*keysOutput, error) {
		return &keysOutput{CacheControl: "public, max-age=300", Body: s.signing.published}, nil
	})
}

// Keys returns the keys the server publishes at KeysPath: the current
// key first, then the retired ones.
func (s *Server) Keys() receipt.PublishedKeys {
	return receipt.PublishedKeys{Keys: append([]receipt.TrustedKey(nil), s.signing.published.Keys...)}
}
