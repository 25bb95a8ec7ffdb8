package spi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sandbank/sandbank/spi"
)

// relay is a toy backend that declares host calls: its "script" asks the
// host function named by the input once and returns the answer. A real
// backend gives its language a way to call req.Host (a global host, an
// import) and relays each call; the effect's broker owns every rule.
type relay struct{}

func (relay) Capabilities() spi.Capabilities {
	return spi.Capabilities{Language: "toy", Network: spi.NetworkNone, WallClock: spi.WallClockSoft,
		FreshPerRun: true, HostCalls: true}
}

func (relay) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	var name string
	if err := json.Unmarshal(req.Input, &name); err != nil || req.Host == nil {
		return spi.Threw("Error", "want a host function's name, and host functions"), nil
	}
	answer, err := req.Host.Call(ctx, name, json.RawMessage(`{"since":"2026-01-01"}`))
	if err != nil {
		// Every error is thrown into the script as is; had the broker
		// ended the run, ctx would be done and the outcome ignored.
		return spi.Threw("Error", err.Error()), nil
	}
	return spi.OK(answer), nil
}

// broker stands in for the effect's: it knows one function.
type broker struct{}

func (broker) Call(_ context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	if name != "orders" {
		return nil, errors.New(`effect: unknown host function "` + name + `"`)
	}
	return json.RawMessage(`[{"id":1,"args":` + string(args) + `}]`), nil
}

func ExampleHost() {
	for _, name := range []string{`"orders"`, `"refunds"`} {
		out, _ := relay{}.Evaluate(context.Background(), spi.Request{Input: json.RawMessage(name), Host: broker{}})
		fmt.Println(out.Kind, string(out.Value)+out.Message)
	}
	// Output:
	// ok [{"id":1,"args":{"since":"2026-01-01"}}]
	// threw effect: unknown host function "refunds"
}
