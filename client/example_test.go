package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/client"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/server"
	"github.com/sandbank/sandbank/spi"
)

// A typed failure crosses the wire as an *effect.Failure; an invalid
// request matches effect.ErrInvalidCall.
func ExampleClient_Run() {
	reg := registry.New()
	b, err := goja.New(nil)
	if err != nil {
		panic(err)
	}
	reg.Register(registry.Entry{Engine: "goja", Language: "javascript", Capabilities: b.Capabilities(),
		Factory: func() (spi.Backend, error) { return goja.New(nil) }})
	srv, err := server.New(reg, nil)
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()

	c, err := client.New(ts.URL, nil)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	_, err = c.Run(ctx, client.Run{Engine: "goja", Source: "for(;;){}", Input: nil, Limits: spi.Limits{WallClock: 100e6}})
	var f *effect.Failure
	if errors.As(err, &f) {
		fmt.Println(f.Code, f.Kind)
	}
	_, err = c.Run(ctx, client.Run{Engine: "nope", Source: "1"})
	fmt.Println(errors.Is(err, effect.ErrInvalidCall), errors.Is(err, client.ErrRetryable))
	// Output:
	// limitExceeded wallClock
	// true false
}
