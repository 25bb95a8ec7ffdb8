package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbank/sandbank/pool"
	"github.com/sandbank/sandbank/spi"
)

// listEnginesName is the name of the tool that lists the served engines.
const listEnginesName = "list_engines"

// Engines is the structured content of list_engines.
type Engines struct {
	Engines []Engine `json:"engines"`
}

// Engine is one served engine, as list_engines describes it.
type Engine struct {
	// Tool is the tool that runs this engine's scripts.
	Tool string `json:"tool"`
	// Engine and Language name the engine and its language.
	Engine   string `json:"engine"`
	Language string `json:"language"`
	// Description is the engine's one line from the registry.
	Description string `json:"description,omitempty"`
	// Capabilities are what the engine declares (and the conformance kit
	// verifies).
	Capabilities spi.Capabilities `json:"capabilities"`
	// Limits are the server's limits of a run.
	Limits EngineLimits `json:"limits"`
}

// EngineLimits are a run's limits as a server serves them.
type EngineLimits struct {
	TimeoutMs      int64 `json:"timeoutMs"`
	MemoryBytes    int64 `json:"memoryBytes"`
	MemoryEnforced bool  `json:"memoryEnforced"`
	MaxScriptBytes int64 `json:"maxScriptBytes"`
	MaxInputBytes  int64 `json:"maxInputBytes"`
	MaxOutputBytes int64 `json:"maxOutputBytes"`
}

func listEnginesDefinition() *mcp.Tool {
	return &mcp.Tool{
		Name:        listEnginesName,
		Title:       "List the sandbox's engines",
		Description: "List the engines this server runs scripts on: for each, the tool that runs it, its language, what it declares (network none, a hard or soft wall clock, whether memory is bounded, a CPU budget, a fresh environment per run) and the limits of a run. Takes no arguments.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		Annotations: &mcp.ToolAnnotations{
			Title: "List engines", ReadOnlyHint: true, IdempotentHint: true,
			DestructiveHint: ptr(false), OpenWorldHint: ptr(false),
		},
	}
}

// engines describes the served engines: each tool's engine as every door
// describes it (pool.Description), with the tool and the server's limits.
func (s *Server) engines() Engines {
	out := Engines{Engines: []Engine{}}
	for _, t := range s.tools {
		for _, d := range s.pool.Describe(t.entry.Engine) {
			out.Engines = append(out.Engines, s.engine(t, d))
		}
	}
	return out
}

// engine renders d, the engine of t.
func (s *Server) engine(t *runTool, d pool.Description) Engine {
	return Engine{
		Tool:         t.name,
		Engine:       d.Engine,
		Language:     d.Language,
		Description:  d.Description,
		Capabilities: d.Capabilities,
		Limits: EngineLimits{
			TimeoutMs:      s.limits.wallClock.Milliseconds(),
			MemoryBytes:    s.limits.memoryBytes,
			MemoryEnforced: d.Capabilities.Memory,
			MaxScriptBytes: s.limits.maxScript,
			MaxInputBytes:  s.limits.maxInput,
			MaxOutputBytes: s.limits.maxOutput,
		},
	}
}

func (s *Server) listEngines(_ context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	e := s.engines()
	var b strings.Builder
	for _, x := range e.Engines {
		c := x.Capabilities
		memory := "memory not bounded"
		if c.Memory {
			memory = fmt.Sprintf("memory %d bytes", x.Limits.MemoryBytes)
		}
		fmt.Fprintf(&b, "%s: engine %s (%s); network %s, wall clock %s (%d ms), %s, cpu budget %s, fresh per run %s.\n",
			x.Tool, x.Engine, x.Language, c.Network, c.WallClock, x.Limits.TimeoutMs, memory, yesNo(c.CPU), yesNo(c.FreshPerRun))
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}, StructuredContent: e}, nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
