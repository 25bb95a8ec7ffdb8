package codemode_test

import (
	"context"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/codemode"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/storage"
)

// Code mode in a Go program: the tools of an MCP server become host
// functions of the scripts an effect runs, so that one script calls many
// tools at once and returns only what the model needs. Every call is a
// host call: bounded, counted, cancelled with the run and in its record.
func ExampleNewUpstream() {
	ctx := context.Background()

	// The upstream: any MCP server, here one built with the SDK and
	// reached in memory (mcp.CommandTransport reaches a process,
	// mcp.StreamableClientTransport an address).
	weather := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1"}, nil)
	type cityIn struct {
		City string `json:"city"`
	}
	type forecast struct {
		City  string  `json:"city"`
		TempC float64 `json:"tempC"`
	}
	temps := map[string]float64{"Oslo": -3, "Lisbon": 17, "Cairo": 24}
	mcp.AddTool(weather, &mcp.Tool{Name: "forecast", Description: "Tomorrow's temperature in a city."},
		func(_ context.Context, _ *mcp.CallToolRequest, in cityIn) (*mcp.CallToolResult, forecast, error) {
			return nil, forecast{City: in.City, TempC: temps[in.City]}, nil
		})
	serverSide, clientSide := mcp.NewInMemoryTransports()
	if _, err := weather.Connect(ctx, serverSide, nil); err != nil {
		log.Fatal(err)
	}
	session, err := mcp.NewClient(&mcp.Implementation{Name: "app", Version: "1"}, nil).Connect(ctx, clientSide, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	up, err := codemode.NewUpstream(ctx, "weather", session, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(up.Declarations())

	backend, err := goja.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	e, err := effect.New(new(storage.MemoryStore), backend, &effect.Options{Host: up.HostFuncs()})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	rec, err := e.Run(ctx, effect.Call{
		Source: []byte(`const all = await Promise.all(input.map(city => host.weather__forecast({ city })));
all.filter(f => f.tempC > 20).map(f => f.city)`),
		Input: []string{"Oslo", "Lisbon", "Cairo"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(rec.Value), rec.Stats.HostCalls, "host calls")
	// Output:
	// declare namespace host {
	//   /** Tomorrow's temperature in a city. (Tool "forecast" of upstream weather.) */
	//   function weather__forecast(args: {
	//     city: string;
	//   }): Promise<{ city: string; tempC: number }>;
	// }
	// ["Cairo"] 3 host calls
}
