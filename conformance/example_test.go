package conformance

import (
	"context"
	"fmt"
	"strings"

	"github.com/sandbank/sandbank/spi"
)

func ExampleCaseNames() {
	fmt.Println(strings.Join(CaseNames(), " "))
	// Output:
	// echo throw syntax_error runaway_loop runaway_native allocation_bomb deep_recursion rich_value no_network no_escape fresh_per_run cpu_budget input_too_big abort abort_mid_run composition
}

// ExampleCheck runs the kit against a backend that declares a soft wall
// clock and no memory or CPU limit: the cases those declarations gate are
// skipped, with the reason.
func ExampleCheck() {
	cfg := newFakeConfig() // a well-behaved fake backend, for the example
	cfg.caps = spi.Capabilities{Language: "javascript", Network: spi.NetworkNone, WallClock: spi.WallClockSoft, FreshPerRun: true}

	report, err := Check(context.Background(), cfg.factory(), &Options{
		Cases: []string{"echo", "rich_value", "allocation_bomb", "abort_mid_run"},
	})
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	for _, c := range report.Cases {
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%-15s %s %s", c.Name, c.Status, c.Reason)))
	}
	fmt.Println("failed:", report.Failed())

	_, err = Check(context.Background(), func() (spi.Backend, error) {
		cfg.caps.Language = "cobol"
		return cfg.factory()()
	}, nil)
	fmt.Println(err)
	// Output:
	// echo            pass
	// allocation_bomb skip gated by Memory: the backend does not declare that it enforces the memory limit
	// rich_value      pass
	// abort_mid_run   skip gated by WallClock hard: the backend declares wall clock "soft", which cannot preempt a running script
	// failed: false
	// conformance: no fixtures for language "cobol"; pass Options.Fixtures
}
