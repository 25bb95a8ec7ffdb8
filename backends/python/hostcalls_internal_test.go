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
	a := newAnswers(1 << 20)
	a.put(answerFrame(0, []byte("1"), nil))
	a.close()
	a.put(answerFrame(1, []byte("2"), nil))
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
