package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/spi"
)

func ExampleCaseNames() {
	fmt.Println(strings.Join(conformance.CaseNames(), " "))
	// Output:
	// echo throw throw_named syntax_error runaway_loop runaway_native allocation_bomb memory_limit deep_recursion rich_value async_value input_contract no_network no_escape host_objects fresh_per_run warm cpu_budget input_too_big abort abort_mid_run composition logs logs_order deterministic files_in files_out files_bounds host_calls host_errors host_limits host_stop host_stuck host_isolation host_clock host_exact host_concurrent
}

// echoBackend answers every script with its input: it passes the echo
// cases and nothing that needs the script to run.
type echoBackend struct{}

func (echoBackend) Capabilities() spi.Capabilities {
	return spi.Capabilities{Language: "javascript", Network: spi.NetworkNone, WallClock: spi.WallClockSoft, FreshPerRun: true}
}

func (echoBackend) Evaluate(_ context.Context, req spi.Request) (spi.Outcome, error) {
	return spi.OK(json.RawMessage(req.Input)), nil
}

// ExampleCheck runs a few cases against a backend that declares a soft
// wall clock and no memory or CPU limit: the cases those declarations gate
// are skipped with the reason, and a case the backend cannot honestly pass
// fails with the rule it broke.
func ExampleCheck() {
	report, err := conformance.Check(context.Background(), func() (spi.Backend, error) { return echoBackend{}, nil },
		&conformance.Options{Cases: []string{"echo", "throw", "allocation_bomb", "abort_mid_run"}})
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	for _, c := range report.Cases {
		fmt.Printf("%-15s %s\n", c.Name, c.Status)
	}
	fmt.Println("failed:", report.Failed())
	for _, p := range report.Proofs {
		fmt.Println("proof of", p.Capability, "proven:", p.Proven)
	}
	// Output:
	// echo            pass
	// throw           fail
	// allocation_bomb skip
	// abort_mid_run   skip
	// failed: true
	// proof of network=none proven: false
	// proof of freshPerRun proven: false
}
