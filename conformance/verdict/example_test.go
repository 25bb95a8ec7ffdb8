package verdict_test

import (
	"fmt"

	"github.com/sandbank/sandbank/conformance/verdict"
	"github.com/sandbank/sandbank/spi"
)

func ExampleCapabilityKeys() {
	caps := spi.Capabilities{Language: "javascript", Network: spi.NetworkNone, WallClock: spi.WallClockHard, Memory: true, FreshPerRun: true}
	fmt.Println(verdict.CapabilityKeys(caps))
	// Output:
	// [network=none wallClock=hard memory freshPerRun]
}

func ExampleFigure_String() {
	f := verdict.Figure{Name: "stopAfter", Value: 251.3, Unit: "ms", Rule: "<=", Bound: 1250}
	fmt.Println(f)
	// Output:
	// stopAfter=251.3 ms (<= 1250)
}

func ExampleReport_FailedCases() {
	r := &verdict.Report{Cases: []verdict.CaseResult{
		{Name: "echo", Status: verdict.StatusPass},
		{Name: "throw", Status: verdict.StatusFail},
		{Name: "cpu_budget", Status: verdict.StatusSkip},
	}}
	fmt.Println(r.FailedCases(), r.Failed())
	// Output:
	// [throw] true
}
