package main

import (
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/server"
)

// serveSigning sets the server's receipt signer from --sign-key and its
// retired keys from --retired-keys. Without --sign-key the server
// generates a key of its own and logs its id.
func serveSigning(o *serveOptions, opts *server.Options) error {
	if o.signKey != "" {
		s, err := readSignKey("--sign-key", o.signKey)
		if err != nil {
			return err
		}
		opts.Signer = s
	}
	if o.retiredKeys != "" {
		ks, err := receipt.ReadKeys(o.retiredKeys)
		if err != nil {
			return usagef("--retired-keys %s: %s", effect.Excerpt(o.retiredKeys), reason(err))
		}
		for _, k := range ks.Keys() {
			if k.Retired.IsZero() {
				return usagef("--retired-keys %s: key %s has no Retired date", effect.Excerpt(o.retiredKeys), k.KeyID)
			}
		}
		opts.RetiredKeys = ks.Keys()
	}
	return nil
}
