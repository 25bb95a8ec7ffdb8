package server_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/client"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/server"
	"github.com/sandbank/sandbank/spi"
)

// The server is an http.Handler; here in development mode (no tenants),
// called by the Go client.
func ExampleNew() {
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

	c, _ := client.New(ts.URL, nil)
	rec, err := c.Run(context.Background(), client.Run{Language: "javascript", Source: "input.n * 2", Input: map[string]int{"n": 21}})
	fmt.Println(string(rec.Value), err, rec.Receipt.Outcome)
	_, err = c.Run(context.Background(), client.Run{Language: "javascript", Source: "throw new TypeError('no')"})
	fmt.Println(err)
	// Output:
	// 42 <nil> ok
	// effect: scriptError: TypeError: no
}
