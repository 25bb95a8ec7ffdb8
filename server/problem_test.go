package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sandbank/sandbank/effect"
)

// TestRunAnswersCoverEveryKind: every kind of error the effect declares
// has its answer at the HTTP door, so a new kind cannot fall through.
func TestRunAnswersCoverEveryKind(t *testing.T) {
	for _, k := range effect.Kinds() {
		_, ok := runAnswers[k]
		assert.True(t, ok, "kind %s has no HTTP answer", k)
	}
	assert.Len(t, runAnswers, len(effect.Kinds()))
}

// TestRunAnswers: the status, kind and retryable of a run's error, and
// the Problem's retryable agrees with effect.Retryable except for a
// closed effect (the server shutting down: another may serve the same
// request) and the caller's own cancellation (answered to no one).
func TestRunAnswers(t *testing.T) {
	for _, c := range []struct {
		err       error
		status    int
		kind      string
		retryable bool
	}{
		{fmt.Errorf("x: %w", effect.ErrInvalidShape), http.StatusBadRequest, KindInvalidCall, false},
		{effect.ErrClosed, http.StatusServiceUnavailable, KindInfrastructure, true},
		{context.Canceled, http.StatusServiceUnavailable, KindInfrastructure, true},
		{context.DeadlineExceeded, http.StatusServiceUnavailable, KindInfrastructure, true},
		{fmt.Errorf("x: %w", effect.ErrOverloaded), http.StatusServiceUnavailable, KindOverloaded, true},
		{errors.New("engine broke"), http.StatusServiceUnavailable, KindInfrastructure, true},
		{fmt.Errorf("x: %w", effect.ErrQuota), http.StatusTooManyRequests, KindQuota, true},
	} {
		k := effect.KindOf(c.err)
		p := runAnswerOf(k).problem(c.err)
		assert.Equal(t, c.status, p.Status, "%s", k)
		assert.Equal(t, c.kind, p.Kind, "%s", k)
		assert.Equal(t, c.retryable, p.Retryable, "%s", k)
		if k != effect.KindClosed && k != effect.KindCanceled {
			assert.Equal(t, effect.Retryable(c.err), p.Retryable, "%s", k)
		}
	}
}

// TestProblemKindsAreTheEffects: the wire words a Problem shares with the
// effect's kinds are the effect's own names.
func TestProblemKindsAreTheEffects(t *testing.T) {
	assert.Equal(t, effect.KindInvalidCall.String(), KindInvalidCall)
	assert.Equal(t, effect.KindOverloaded.String(), KindOverloaded)
	assert.Equal(t, effect.KindInfrastructure.String(), KindInfrastructure)
	assert.Equal(t, effect.KindQuota.String(), KindQuota)
}
