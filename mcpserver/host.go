package mcpserver

import (
	"github.com/sandbank/sandbank/effect"
)

// Host is what a server's runs may call besides their script: host
// functions, and what the run tools' descriptions say of them. Package
// codemode's *Host is one: the tools of other MCP servers (code mode).
// Its methods are called concurrently.
type Host interface {
	// HostFuncs returns the host functions of a run that starts now.
	HostFuncs() effect.HostFuncs
	// Describe returns what a run tool's description says of them to a
	// script of lang, on an engine that declares host calls: how the
	// script calls them, and their declarations.
	Describe(lang string) string
	// Instructions returns a sentence of the server's instructions to
	// the model about them; it may be empty.
	Instructions() string
	// Watch calls changed each time Describe's text changes, until stop
	// is called; the server then declares its run tools again.
	Watch(changed func()) (stop func())
}

// hostFuncs are the host functions of a run that starts now; nil
// without a host.
func (s *Server) hostFuncs() effect.HostFuncs {
	if s.host == nil {
		return nil
	}
	return s.host.HostFuncs()
}

// watchHost has the server follow its host's descriptions.
func (s *Server) watchHost() {
	if s.host != nil {
		s.unwatch = s.host.Watch(s.redeclare)
	}
}

// redeclare adds the run tools again with their new descriptions, after
// the host's changed: the SDK tells every client that the tools changed
// (notifications/tools/list_changed).
func (s *Server) redeclare() {
	s.refresh.Lock()
	defer s.refresh.Unlock()
	if s.closed {
		return
	}
	for _, t := range s.tools {
		s.server.AddTool(t.definition(), t.handle)
	}
}
