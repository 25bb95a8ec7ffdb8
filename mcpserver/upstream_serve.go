package mcpserver

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sandbank/sandbank/effect"
)

// This file is the server's side of its upstreams: their tools as the
// host functions of every run, declared in the run tools' descriptions,
// and both brought up to date when an upstream's tools change.

// codeMode is the upstreams' tools as the server serves them at one
// time.
type codeMode struct {
	host         effect.HostFuncs
	declarations string // in TypeScript (upstream_decl.go)
}

// setUpstreams checks the server's upstreams and gathers their host
// functions.
func (s *Server) setUpstreams(ups []*Upstream) error {
	if len(ups) == 0 {
		return nil
	}
	s.upstreams = slices.Clone(ups)
	for _, u := range s.upstreams {
		if u == nil {
			return fmt.Errorf("%w: a nil upstream", ErrInvalidOptions)
		}
	}
	slices.SortFunc(s.upstreams, func(a, b *Upstream) int { return strings.Compare(a.name, b.name) })
	for i := 1; i < len(s.upstreams); i++ {
		if s.upstreams[i].name == s.upstreams[i-1].name {
			return fmt.Errorf("%w: two upstreams are named %s", ErrInvalidOptions, s.upstreams[i].name)
		}
	}
	s.code.Store(gather(s.upstreams))
	return nil
}

// gather returns the tools of ups, whose names differ: so do their host
// functions' (NAME__TOOL, NAME without "__").
func gather(ups []*Upstream) *codeMode {
	c := &codeMode{host: effect.HostFuncs{}, declarations: declarations(ups)}
	for _, u := range ups {
		for name, fn := range u.HostFuncs() {
			c.host[name] = fn
		}
	}
	return c
}

// hostFuncs are the upstreams' tools as host functions; nil without
// upstreams.
func (s *Server) hostFuncs() effect.HostFuncs {
	if c := s.code.Load(); c != nil {
		return c.host
	}
	return nil
}

// declarations are the upstreams' tools in TypeScript.
func (s *Server) declarations() string {
	if c := s.code.Load(); c != nil {
		return c.declarations
	}
	return ""
}

// watchUpstreams has the server follow its upstreams' tools.
func (s *Server) watchUpstreams() {
	for _, u := range s.upstreams {
		s.unwatch = append(s.unwatch, u.watch(s.refreshUpstreams))
	}
}

// refreshUpstreams gathers the upstreams' tools again, after one's
// changed: the next run calls the new ones. When the declarations
// changed, the run tools are added again with their new descriptions,
// and the SDK tells every client that the tools changed
// (notifications/tools/list_changed).
func (s *Server) refreshUpstreams() {
	s.refresh.Lock()
	defer s.refresh.Unlock()
	if s.unwatch == nil {
		return // closed
	}
	c := gather(s.upstreams)
	old := s.code.Swap(c)
	if old != nil && old.declarations == c.declarations {
		return
	}
	for _, t := range s.tools {
		s.server.AddTool(t.definition(), t.handle)
	}
}
