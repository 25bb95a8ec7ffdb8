package spi_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sandbank/sandbank/spi"
)

// upper is a toy backend: its "script" is ignored and its result is the
// input's "text" field, or a thrown error when the field is missing. A
// real backend runs req.Script in its engine; everything around the engine
// (bounds, mapping, cancellation) is the effect's job.
type upper struct{}

var _ spi.Backend = upper{}

func (upper) Capabilities() spi.Capabilities {
	return spi.Capabilities{Language: "toy", Network: spi.NetworkNone, WallClock: spi.WallClockSoft,
		FreshPerRun: true}
}

func (upper) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return spi.Outcome{}, err // no outcome was obtained
	}
	var in struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(req.Input, &in); err != nil || in.Text == nil {
		return spi.Threw("TypeError", "input.text is missing"), nil
	}
	v, _ := json.Marshal(*in.Text)
	return spi.OK(v), nil
}

func Example() {
	var b spi.Backend = upper{}
	caps := b.Capabilities()
	fmt.Println("valid:", caps.Validate() == nil)
	decl, _ := json.Marshal(caps)
	fmt.Println(string(decl))

	for _, input := range []string{`{"text":"hello"}`, `{}`} {
		out, err := b.Evaluate(context.Background(), spi.Request{Input: json.RawMessage(input)})
		switch {
		case err != nil:
			fmt.Println("no outcome:", err)
		case out.Kind == spi.KindOK:
			fmt.Println(out.Kind, string(out.Value))
		default:
			fmt.Println(out.Kind, out.Name, out.Message)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.Evaluate(ctx, spi.Request{Input: json.RawMessage(`{"text":"late"}`)})
	fmt.Println("no outcome:", err)
	// Output:
	// valid: true
	// {"language":"toy","network":"none","wallClock":"soft","memory":false,"cpu":false,"freshPerRun":true}
	// ok "hello"
	// threw TypeError input.text is missing
	// no outcome: context canceled
}
