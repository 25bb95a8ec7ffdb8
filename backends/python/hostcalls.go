//go:build linux

package python

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sandbank/sandbank/spi"
)

// This file relays a run's host calls. The host numbers the call frames
// in the order it reads them (the runner numbers its calls the same way;
// a call frame carries no number of the guest's), and the session hands
// each to the broker as it reads it, in the script's order: with the
// broker's Start (spi.HostStarter) when it has one, so that the calls a
// script has in flight at once (await asyncio.gather(host.a(),
// host.b())) run at once, else with Call, one after the other. Each call
// gets one answer (the broker's first), a length-prefixed frame tagged
// with the host's number, in the order the answers arrive, through one
// writer per run (a broker's done must not block, and the runner may be
// busy); once the run ends nothing more is written.

// answers is a run's queue of host-call answers for the runner. Closing
// it is the end of the run's host calls: no call starts after it
// (starting holds mu's read side) and no answer is queued. The bytes
// queued are bounded by what the process could hold (waitRoom): the
// session reads no more frames while they are past it.
type answers struct {
	starting sync.RWMutex // held while a call starts; close takes it
	mu       sync.Mutex
	frames   [][]byte
	queued   int64 // bytes in frames
	max      int64
	closed   bool
	wake     chan struct{} // signalled (never blocking) when a frame is queued
	room     chan struct{} // signalled (never blocking) when frames are taken
	quit     chan struct{} // closed when the run ends
}

func newAnswers(max int64) *answers {
	return &answers{max: max, wake: make(chan struct{}, 1), room: make(chan struct{}, 1), quit: make(chan struct{})}
}

// put queues one answer frame; after close it drops it. It never blocks.
func (a *answers) put(frame []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	a.frames = append(a.frames, frame)
	a.queued += int64(len(frame))
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// close drops the queued answers and refuses every later one.
func (a *answers) close() {
	a.starting.Lock()
	defer a.starting.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.closed {
		a.closed = true
		a.frames = nil
		a.queued = 0
		close(a.quit)
	}
}

func (a *answers) isClosed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.closed
}

// take returns the queued frames, or false once closed.
func (a *answers) take() ([][]byte, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	frames := a.frames
	a.frames = nil
	return frames, !a.closed
}

// written counts n bytes of taken frames as written to the runner.
func (a *answers) written(n int) {
	a.mu.Lock()
	a.queued -= int64(n)
	a.mu.Unlock()
	select {
	case a.room <- struct{}{}:
	default:
	}
}

// waitRoom waits while the bytes queued or being written are past the
// bound; it reports false once the run has ended.
func (a *answers) waitRoom() bool {
	for {
		a.mu.Lock()
		full, closed := a.queued > a.max, a.closed
		a.mu.Unlock()
		if closed {
			return false
		}
		if !full {
			return true
		}
		select {
		case <-a.room:
		case <-a.quit:
			return false
		}
	}
}

// writeAnswers writes the queued answers to the runner until the run ends
// (or the runner's input is gone).
func (p *proc) writeAnswers() {
	for {
		select {
		case <-p.answers.wake:
		case <-p.answers.quit:
			return
		}
		frames, open := p.answers.take()
		if !open {
			return
		}
		for _, frame := range frames {
			p.inMu.Lock()
			_, err := p.in.Write(frame)
			p.inMu.Unlock()
			p.answers.written(len(frame))
			if err != nil {
				return
			}
		}
	}
}

// answerFrame is the frame that answers call number id: 'O' and the
// answer's JSON text, or 'F' and the failure's text; the number (8
// bytes) and the payload's length (4 bytes), big-endian, before the
// payload. Its length, not its content, ends it: no byte of an answer
// can end or begin another.
func answerFrame(id uint64, res json.RawMessage, err error) []byte {
	kind, payload := byte('O'), []byte(res)
	if err != nil {
		kind, payload = 'F', []byte(strings.ToValidUTF8(err.Error(), "\uFFFD"))
	}
	frame := make([]byte, 13, 13+len(payload))
	frame[0] = kind
	binary.BigEndian.PutUint64(frame[1:9], id)
	binary.BigEndian.PutUint32(frame[9:13], uint32(len(payload)))
	return append(frame, payload...)
}

// hostCall hands call number id (the host's count of the call frames
// read) to the broker; its answer, the first the broker gives, is queued
// for the runner when it arrives.
func (p *proc) hostCall(ctx context.Context, req spi.Request, id uint64, name string, args json.RawMessage) {
	var answered atomic.Bool
	answer := func(res json.RawMessage, err error) {
		if !answered.CompareAndSwap(false, true) {
			return // one answer per call
		}
		if err == nil && (len(res) == 0 || int64(len(res)) > math.MaxUint32) {
			err = errBadAnswer
		}
		p.answers.put(answerFrame(id, res, err))
	}
	if req.Host == nil {
		answer(nil, errNoHost)
		return
	}
	if hs, ok := req.Host.(spi.HostStarter); ok {
		// Start returns at once; the run's end waits for it, so that no
		// call starts once Evaluate has returned.
		p.answers.starting.RLock()
		defer p.answers.starting.RUnlock()
		if !p.answers.isClosed() {
			hs.Start(ctx, name, args, answer)
		}
		return
	}
	if !p.answers.isClosed() {
		answer(req.Host.Call(ctx, name, args))
	}
}

// errBadAnswer answers a call whose broker answered nothing, or more than
// a frame carries.
var errBadAnswer = errors.New("python: the host's answer cannot be sent")
