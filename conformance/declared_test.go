package conformance

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// declaringFake is a fake backend that declares host objects of its own,
// as an spi.HostObjectDeclarer.
type declaringFake struct {
	*fake
	names []string
}

func (d declaringFake) HostObjects() []string { return d.names }

var _ spi.HostObjectDeclarer = declaringFake{}

func TestHostObjectsTheBackendDeclares(t *testing.T) {
	for _, tc := range []struct {
		name     string
		declared []string
		reason   string // "" means the case passes
	}{
		{"every name declared", []string{"sandbankHost.*"}, ""},
		{"one name left out", []string{"sandbankHost"}, "reaches 1 name(s) outside the language's standard set: sandbankHost (+1 under it)"},
		{"nothing declared", nil, "reaches 2 name(s) outside the language's standard set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := newFakeConfig()
			cfg.override["host_objects"] = func(_ context.Context, f *fake, req spi.Request) (spi.Outcome, error) {
				return spi.OK(json.RawMessage(`{"names":["Math","sandbankHost","sandbankHost.readFile"],"nonce":"` + nonceOf(f, req) + `"}`)), nil
			}
			inner := cfg.factory()
			factory := func() (spi.Backend, error) {
				b, err := inner()
				if err != nil {
					return nil, err
				}
				return declaringFake{fake: b.(*fake), names: tc.declared}, nil
			}
			rep, err := Check(context.Background(), factory, &Options{Cases: []string{"host_objects"}})
			require.NoError(t, err)
			got := result(t, rep, "host_objects")
			if tc.reason == "" {
				assert.Equal(t, StatusPass, got.Status, got.Reason)
				return
			}
			assert.Equal(t, StatusFail, got.Status)
			assert.Contains(t, got.Reason, tc.reason)
		})
	}
}
