package effect

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSuspendedLineIsInTheRecord: a run suspended at a call records that
// call as its suspended line, however soon the backend returns once its
// context is cancelled. The line used to be completed after the backend
// was cancelled, so a record sealed in between showed the call canceled
// and the continuation had no pending call (seen in the Temporal door's
// integration test under load, and here under -race).
func TestSuspendedLineIsInTheRecord(t *testing.T) {
	r := newRelay()
	r.deterministic = true
	e, err := New(newMemoryStore(), r, &Options{MaxAbandoned: 1 << 20, Host: HostFuncs{"f": func(context.Context, json.RawMessage) (any, error) {
		return nil, Suspend("not yet")
	}}})
	require.NoError(t, err)
	in := relayInput(false, relayCall{"f", json.RawMessage(`1`)})
	const workers, runs = 8, 300
	var (
		wg   sync.WaitGroup
		bad  = make(chan HostCallOutcome, workers*runs)
		errs = make(chan error, workers*runs)
	)
	for range workers {
		wg.Go(func() {
			for range runs {
				rec, err := e.Run(context.Background(), Call{Source: hostScript, Input: in, Durable: &Durable{MaxSuspensions: 2, MaxLogBytes: 1 << 10}})
				if !errors.Is(err, ErrSuspended) || rec == nil || len(rec.HostCalls) != 1 {
					errs <- err
					continue
				}
				if o := rec.HostCalls[0].Outcome; o != HostCallSuspended {
					bad <- o
				}
			}
		})
	}
	wg.Wait()
	close(bad)
	close(errs)
	for err := range errs {
		t.Fatalf("a run did not end suspended at its one call: %v", err)
	}
	var got []HostCallOutcome
	for o := range bad {
		got = append(got, o)
	}
	assert.Empty(t, got, "runs of %d whose record does not show the suspended call", workers*runs)
}
