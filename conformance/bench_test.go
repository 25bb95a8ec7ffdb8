package conformance

import (
	"context"
	"testing"
)

// BenchmarkCheckGoodFake measures a full kit run against the well-behaved
// fake backend: the kit's own overhead plus its fixed waits (the 250 ms
// runaway_native wall clock, abort_mid_run's settle, the canary's settle
// time, the small-budget fake's 20 ms CPU budget).
//
//	go test -run '^$' -bench CheckGoodFake -benchtime 5x ./conformance/
func BenchmarkCheckGoodFake(b *testing.B) {
	for b.Loop() {
		rep, err := Check(context.Background(), newFakeConfig().factory(), &Options{CPUBudget: smallBudget()})
		if err != nil || rep.Failed() {
			b.Fatalf("the good fake must pass: %v %+v", err, rep)
		}
	}
}
