package temporal

import (
	"context"

	"github.com/sandbank/sandbank/effect"
)

// run is the one place the activity calls the effect: it runs call on eff
// and returns the run's record (see effect.Effect.Run: present for every run
// that produced a value or a typed failure, and for every run that reached
// the backend) and the effect's error as is (a *effect.Failure, an invalid
// call, infrastructure or the context's error).
func run(ctx context.Context, eff *effect.Effect, call effect.Call) (*effect.Record, error) {
	return eff.Run(ctx, call)
}
