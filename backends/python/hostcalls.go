//go:build linux

package python

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"

	"github.com/sandbank/sandbank/spi"
)

// This file relays a run's host calls. The runner numbers its calls; the
// session hands each to the broker as it reads it, in the script's order:
// with the broker's Start (spi.HostStarter) when it has one, so that the
// calls a script has in flight at once (await asyncio.gather(host.a(),
// host.b())) run at once, else with Call, one after the other. Answers go
// back tagged with the call's id, in the order they arrive, through one
// writer per run (a broker's done must not block, and the runner may be
// busy); once the run ends nothing more is written.

// answers is a run's queue of host-call answers for the runner. Closing
// it is the end of the run's host calls: no call starts after it
// (starting holds mu's read side) and no answer is queued.
type answers struct {
	starting sync.RWMutex // held while a call starts; close takes it
	mu       sync.Mutex
	lines    [][]byte
	closed   bool
	wake     chan struct{} // signalled (never blocking) when a line is queued
	quit     chan struct{} // closed when the run ends
}

func newAnswers() *answers {
	return &answers{wake: make(chan struct{}, 1), quit: make(chan struct{})}
}

// put queues one answer line; after close it drops it. It never blocks.
func (a *answers) put(line []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	a.lines = append(a.lines, line)
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
		a.lines = nil
		close(a.quit)
	}
}

func (a *answers) isClosed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.closed
}

// take returns the queued lines, or false once closed.
func (a *answers) take() ([][]byte, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	lines := a.lines
	a.lines = nil
	return lines, !a.closed
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
		lines, open := p.answers.take()
		if !open {
			return
		}
		for _, line := range lines {
			p.inMu.Lock()
			_, err := p.in.Write(line)
			p.inMu.Unlock()
			if err != nil {
				return
			}
		}
	}
}

// hostCall hands one call to the broker; its answer is queued for the
// runner when it arrives.
func (p *proc) hostCall(ctx context.Context, req spi.Request, id uint64, m msg) {
	answer := func(res json.RawMessage, err error) {
		line := strconv.AppendUint([]byte(`{"i":`), id, 10)
		if err != nil {
			text, _ := json.Marshal(err.Error())
			line = append(append(append(line, `,"err":`...), text...), "}\n"...)
		} else {
			line = append(append(append(line, `,"ok":`...), res...), "}\n"...)
		}
		p.answers.put(line)
	}
	if req.Host == nil {
		answer(nil, errNoHost)
		return
	}
	args := m.A
	if len(args) == 0 {
		args = json.RawMessage("null")
	}
	if hs, ok := req.Host.(spi.HostStarter); ok {
		// Start returns at once; the run's end waits for it, so that no
		// call starts once Evaluate has returned.
		p.answers.starting.RLock()
		defer p.answers.starting.RUnlock()
		if !p.answers.isClosed() {
			hs.Start(ctx, m.N, args, answer)
		}
		return
	}
	if !p.answers.isClosed() {
		answer(req.Host.Call(ctx, m.N, args))
	}
}
