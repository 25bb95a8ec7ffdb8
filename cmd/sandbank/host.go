package main

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/sandbank/sandbank/effect"
)

// "sandbank run --host NAME=FILE.json": a host function for trying host
// calls safely. It answers every call with the file's JSON, whatever the
// arguments, and records the calls for --json. Nothing the command line
// ships as a host function runs a command or reaches the network.

// hostCall is one call a script made, as --json lists it.
type hostCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	seq  int             // its place in the run's record (effect.HostCallSeq)
}

// hostLog records the calls of a run; list returns them in the order
// the script issued them (they may run at once, and begin in any order).
type hostLog struct {
	mu    sync.Mutex
	calls []hostCall
}

func (l *hostLog) list() []hostCall {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	calls := append([]hostCall{}, l.calls...)
	l.mu.Unlock()
	slices.SortStableFunc(calls, func(a, b hostCall) int { return cmp.Compare(a.seq, b.seq) })
	return calls
}

// parseHosts reads every --host NAME=FILE.json: the file must be JSON
// text of at most maxFileBytes. Every problem is a usage error; a name the
// effect does not accept is refused by the effect, also as a usage error.
func parseHosts(specs []string) (effect.HostFuncs, *hostLog, error) {
	if len(specs) == 0 {
		return nil, nil, nil
	}
	log := &hostLog{}
	fns := effect.HostFuncs{}
	for _, spec := range specs {
		name, file, ok := strings.Cut(spec, "=")
		if !ok || name == "" || file == "" {
			return nil, nil, usagef("--host %s: want NAME=FILE.json", quote(spec))
		}
		if _, dup := fns[name]; dup {
			return nil, nil, usagef("--host: %s is given twice", quote(name))
		}
		b, err := readFileBounded(file)
		if err != nil {
			return nil, nil, usagef("--host %s: %s: %s", quote(name), effect.Excerpt(file), reason(err))
		}
		if err := checkJSON(b); err != nil {
			return nil, nil, usagef("--host %s: %s: %s", quote(name), effect.Excerpt(file), reason(err))
		}
		answer := json.RawMessage(b)
		fns[name] = func(ctx context.Context, args json.RawMessage) (any, error) {
			seq, _ := effect.HostCallSeq(ctx)
			log.mu.Lock()
			log.calls = append(log.calls, hostCall{Name: name, Args: append(json.RawMessage(nil), args...), seq: seq})
			log.mu.Unlock()
			return answer, nil
		}
	}
	return fns, log, nil
}

// withHostCalls adds "hostCalls": [...] to the JSON object out (which ends
// with "}") when the run had host functions.
func withHostCalls(out []byte, log *hostLog) []byte {
	if log == nil || len(out) < 2 || out[len(out)-1] != '}' {
		return out
	}
	b, err := json.Marshal(log.list())
	if err != nil {
		return out
	}
	out = append(out[:len(out)-1:len(out)-1], `,"hostCalls":`...)
	out = append(out, b...)
	return append(out, '}')
}
