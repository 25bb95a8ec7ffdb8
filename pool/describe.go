package pool

import (
	"slices"

	"github.com/sandbank/sandbank/spi"
)

// Description is one engine as every door describes it; each renders it
// in its own wire format (GET /v1/engines, list_engines, sandbank
// engines).
type Description struct {
	// Engine and Language name the engine and the language it runs.
	Engine   string `json:"engine"`
	Language string `json:"language"`
	// Default is true for the default engine of its language, the one
	// Resolve chooses for a request naming only the language.
	Default bool `json:"default"`
	// Capabilities are what the engine declares in the registry, read
	// without building its backend; the conformance kit verifies them.
	Capabilities spi.Capabilities `json:"capabilities"`
	// Description is the engine's one line from the registry.
	Description string `json:"description,omitempty"`
}

// Describe describes the engines in allowed (none: every engine), sorted
// by engine name, without building any. A name that is not registered is
// left out.
func (p *Pool) Describe(allowed ...string) []Description {
	out := []Description{}
	for _, e := range p.reg.Engines() {
		if len(allowed) > 0 && !slices.Contains(allowed, e.Engine) {
			continue
		}
		def, err := p.reg.Default(e.Language)
		out = append(out, Description{
			Engine: e.Engine, Language: e.Language,
			Default:      err == nil && def.Engine == e.Engine,
			Capabilities: e.Capabilities, Description: e.Description,
		})
	}
	return out
}
