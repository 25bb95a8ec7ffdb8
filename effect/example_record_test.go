package effect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// chatty is an example backend that declares Logs: it logs a line at
// each level, then fails when input.fail is true.
type chatty struct{}

func (chatty) Capabilities() spi.Capabilities {
	return spi.Capabilities{Language: "example", Network: spi.NetworkNone, WallClock: spi.WallClockHard, FreshPerRun: true, Logs: true}
}

func (chatty) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	var in struct{ Fail bool }
	_ = json.Unmarshal(req.Input, &in)
	req.Log(spi.LevelInfo, spi.StreamStdout, "starting")
	req.Log(spi.LevelWarn, spi.StreamStderr, "careful\x00") // scrubbed: U+FFFD
	out := spi.OK(json.RawMessage(`{"done":true}`))
	if in.Fail {
		out = spi.Threw("Error", "it failed")
	}
	out.Stats = spi.Stats{CPUUnit: "steps", CPUUnits: 12}
	return out, nil
}

func ExampleEffect_Run() {
	scripts := new(storage.MemoryStore)
	script := []byte("log; log; maybe fail")
	addr, _ := scripts.Put(script)
	e, err := effect.New(scripts, chatty{}, &effect.Options{Engine: "chatty"})
	if err != nil {
		panic(err)
	}
	defer e.Close()

	// A failed run has a record too, with what the script logged.
	input := map[string]bool{"fail": true}
	rec, err := e.Run(context.Background(), effect.Call{Script: addr, Input: input})
	fmt.Println("error:", err)
	for _, l := range rec.Logs {
		fmt.Printf("%s %s %+q\n", l.Level, l.Stream, l.Text)
	}
	fmt.Println("steps:", rec.Stats.CPUUnits)
	r := rec.Receipt
	fmt.Println("receipt:", r.Engine, r.Outcome, r.Script == addr, r.SPIVersion)

	// Stored as JSON, checked later against the script and the input.
	stored, _ := json.Marshal(rec)
	var back effect.Record
	_ = json.Unmarshal(stored, &back)
	fmt.Println("verify:", receipt.Verify(&back, script, input))
	fmt.Println("verify other input:", receipt.Verify(&back, script, map[string]bool{"fail": false}) != nil)
	// Output:
	// error: effect: scriptError: Error: it failed
	// info stdout "starting"
	// warn stderr "careful\ufffd"
	// steps: 12
	// receipt: chatty scriptError true 1.5.0
	// verify: <nil>
	// verify other input: true
}

func ExampleReceipt_Canonical() {
	scripts := new(storage.MemoryStore)
	addr, _ := scripts.Put([]byte("script"))
	e, _ := effect.New(scripts, chatty{}, &effect.Options{Engine: "chatty"})
	defer e.Close()
	rec, _ := e.Run(context.Background(), effect.Call{Script: addr, Input: map[string]int{"n": 1}})
	r := rec.Receipt
	r.Started, r.Duration = time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC), 1500000 // fixed for the example
	r.Backend = ""                                                                 // "github.com/sandbank/sandbank@v1.2.3" in a program built from a tagged module
	b, _ := r.Canonical()
	fmt.Println(string(b))
	// Output:
	// {"capabilities":{"cpu":false,"freshPerRun":true,"language":"example","logs":true,"memory":false,"network":"none","wallClock":"hard"},"durationNs":1500000,"engine":"chatty","format":"sandbank.receipt/1","inputDigest":"sha256:2bfd14f43d17fc7cea24e0917a8879b4b2f880b8baeec1b9d90fbaad655e71bd","limits":{"maxInputBytes":33554432,"maxLogBytes":262144,"maxLogLines":1000,"maxOutputBytes":4194304,"maxScriptBytes":16777216,"memoryBytes":33554432,"wallClockNs":5000000000},"outcome":"ok","outputDigest":"sha256:ace9288a3ff79a9132b9ddf621bc19354ffb04b3eacb17486ad6dc4d51303961","script":"sha256:21a0270b7f66a1e4c25933f13a1e5a1bbb4757578072930c8189131f9c6aaae1","spiVersion":"1.5.0","started":"2026-12-01T14:00:00Z"}
}

// Tracing is off unless a TracerProvider is given; here an SDK provider
// records the span in memory. In production, pass the provider your
// exporter (OTLP, say) is registered with.
func ExampleOptions_tracerProvider() {
	recorder := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	defer tp.Shutdown(context.Background())

	scripts := new(storage.MemoryStore)
	addr, _ := scripts.Put([]byte("script"))
	e, _ := effect.New(scripts, chatty{}, &effect.Options{
		Engine:         "chatty",
		TracerProvider: tp,
		Logger:         slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	defer e.Close()
	_, _ = e.Evaluate(context.Background(), effect.Call{Script: addr})

	for _, s := range recorder.Ended() {
		fmt.Println(s.Name())
		for _, kv := range s.Attributes() {
			switch kv.Key {
			case "sandbank.engine", "sandbank.outcome", "sandbank.cpu_units":
				fmt.Printf("  %s=%s\n", kv.Key, kv.Value.Emit())
			}
		}
	}
	// Output:
	// sandbank.run
	//   sandbank.engine=chatty
	//   sandbank.outcome=ok
	//   sandbank.cpu_units=12
}
