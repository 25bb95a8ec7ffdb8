package main

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/record"
)

func (a *app) keygenCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keygen [NAME]",
		Short: "Write a new key pair for signing receipts",
		Long: `keygen writes a new Ed25519 key pair for signing run receipts:
NAME.key, the private key (PEM PKCS #8, mode 0600), and NAME.pub, the
public key (PEM), and prints the key's id, which signed receipts name.
NAME defaults to "sandbank". An existing file is never overwritten.

"sandbank run --sign-key NAME.key" and "sandbank serve --sign-key
NAME.key" sign with it; they refuse a private key file that anyone but
its owner may read or write (chmod 600 it). "sandbank verify --key
NAME.pub" checks a receipt's signature.

Exit codes: 0 written; 64 a file exists or cannot be written.`,
		Example: `  sandbank keygen host
  sandbank run --sign-key host.key --json --input '{"n":2}' double.js > run.json
  sandbank verify --key host.pub --record run.json --input '{"n":2}' double.js`,
		Args: cobra.MaximumNArgs(1),
		RunE: wrap(func(cmd *cobra.Command, args []string) error {
			name := "sandbank"
			if len(args) == 1 {
				name = args[0]
			}
			return a.keygen(name)
		}),
	}
	return cmd
}

func (a *app) keygen(name string) error {
	s, err := receipt.GenerateEd25519Signer()
	if err != nil {
		return untyped(err)
	}
	priv, pub := name+".key", name+".pub"
	if err := receipt.WriteKeyFiles(s, priv, pub); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return usagef("%s or %s exists; keygen never overwrites a key", quote(priv), quote(pub))
		}
		return usagef("writing the key pair: %s", reason(err))
	}
	_, err = fmt.Fprintf(a.stdout, "private key: %s (keep it; mode 0600)\npublic key:  %s\nkey id:      %s\n",
		effect.Excerpt(priv), effect.Excerpt(pub), record.KeyIDOf(s.PublicKey()))
	return err
}

// readSignKey reads a --sign-key private key file for flag; every failure
// is a usage error (a mode more open than 0600 included).
func readSignKey(flag, path string) (*receipt.Ed25519Signer, error) {
	s, err := receipt.ReadSignerFile(path)
	if err != nil {
		return nil, usagef("%s %s: %s", flag, effect.Excerpt(path), reason(err))
	}
	return s, nil
}
