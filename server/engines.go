package server

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/registry"
)

// engines holds one Effect per engine, built on the first run that needs
// it and kept until Close: engines are safe for concurrent use, and
// building one (a wasm compile) is far dearer than a run. Every run hands
// its script to the effect as Call.Source (the server reads by-address
// scripts from the tenant's own store first), so the effects share one
// empty store and never read a script by address themselves.
type engines struct {
	reg  *registry.Registry
	opts effect.Options // per engine: Engine is set

	mu      sync.Mutex
	effects map[string]*engineSlot
	closed  bool
}

type engineSlot struct {
	once sync.Once
	eff  *effect.Effect
	err  error
}

var errEnginesClosed = errors.New("server: shutting down")

// effect returns the engine's Effect, building it once. A build that fails
// is retried by the next run.
func (es *engines) effect(e registry.Entry) (*effect.Effect, error) {
	es.mu.Lock()
	if es.closed {
		es.mu.Unlock()
		return nil, errEnginesClosed
	}
	slot := es.effects[e.Engine]
	if slot == nil {
		slot = &engineSlot{}
		es.effects[e.Engine] = slot
	}
	es.mu.Unlock()
	slot.once.Do(func() {
		backend, err := e.Factory()
		if err != nil {
			slot.err = fmt.Errorf("server: engine %s: %w", e.Engine, err)
			return
		}
		opts := es.opts
		opts.Engine = e.Engine
		slot.eff, slot.err = effect.New(effect.NewMemoryStore(), backend, &opts)
		if c, ok := backend.(io.Closer); ok && slot.err != nil {
			_ = c.Close()
		}
	})
	if slot.err != nil {
		es.mu.Lock()
		if es.effects[e.Engine] == slot {
			delete(es.effects, e.Engine)
		}
		es.mu.Unlock()
	}
	return slot.eff, slot.err
}

// close closes every built Effect; later runs get errEnginesClosed.
func (es *engines) close() error {
	es.mu.Lock()
	es.closed = true
	slots := es.effects
	es.effects = nil
	es.mu.Unlock()
	var errs []error
	for _, s := range slots {
		s.once.Do(func() { s.err = errEnginesClosed })
		if s.eff != nil {
			errs = append(errs, s.eff.Close())
		}
	}
	return errors.Join(errs...)
}

// boundDetail bounds a text for a response.
func boundDetail(s string) string {
	const max = 512
	if len(s) > max {
		return strings.ToValidUTF8(s[:max], "") + "…[truncated]"
	}
	return s
}
