package conformance

import (
	"github.com/sandbank/sandbank/conformance/verdict"
	"github.com/sandbank/sandbank/spi"
)

// provesKey maps a case's "proves" entry to the key of caps it proves,
// or "" when caps does not declare it.
func provesKey(p string, caps spi.Capabilities) string {
	switch p {
	case "network":
		if caps.Network == spi.NetworkNone || caps.Network == spi.NetworkAllowlist {
			return "network=" + caps.Network.String()
		}
	case "wallClock=hard":
		if caps.WallClock == spi.WallClockHard {
			return p
		}
	case "memory":
		if caps.Memory {
			return p
		}
	case "cpu":
		if caps.CPU {
			return p
		}
	case "freshPerRun":
		if caps.FreshPerRun {
			return p
		}
	case "hostCalls":
		if caps.HostCalls {
			return p
		}
	case "deterministic":
		if caps.Deterministic {
			return p
		}
	}
	return ""
}

// proofs builds Report.Proofs from the results.
func proofs(caps spi.Capabilities, results []CaseResult) []Proof {
	byName := map[string]CaseResult{}
	for _, r := range results {
		byName[r.Name] = r
	}
	var out []Proof
	for _, key := range verdict.CapabilityKeys(caps) {
		p := Proof{Capability: key, Proven: true, By: []string{}}
		for _, c := range allCases {
			measures := false
			for _, pr := range c.proves {
				if provesKey(pr, caps) == key {
					measures = true
				}
			}
			if !measures {
				continue
			}
			r, ran := byName[c.name]
			switch {
			case !ran:
				p.Proven = false
				p.By = append(p.By, c.name+": not run")
			case r.Status != StatusPass:
				p.Proven = false
				p.By = append(p.By, c.name+": "+string(r.Status))
			case len(r.Evidence) == 0:
				p.By = append(p.By, c.name+": pass")
			default:
				for _, f := range r.Evidence {
					p.By = append(p.By, c.name+": "+f.String())
				}
			}
		}
		if len(p.By) == 0 {
			p.Proven = false
		}
		out = append(out, p)
	}
	return out
}
