//go:build linux

package python

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAnswersEndWithTheRun: once a run's answers are closed (its end), an
// answer arriving late is dropped, and the writer's queue reports it is
// closed, dropping what was still queued.
func TestAnswersEndWithTheRun(t *testing.T) {
	a := newAnswers()
	a.put([]byte("{\"i\":0,\"ok\":1}\n"))
	a.close()
	a.put([]byte("{\"i\":1,\"ok\":2}\n"))
	lines, open := a.take()
	assert.False(t, open)
	assert.Empty(t, lines)
	assert.True(t, a.isClosed())
	a.close() // idempotent
	select {
	case <-a.quit:
	default:
		t.Error("closing must stop the writer")
	}
}
