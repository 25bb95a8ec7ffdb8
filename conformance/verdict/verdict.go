package verdict

import (
	"fmt"
	"strconv"
	"time"

	"github.com/sandbank/sandbank/spi"
)

// Status is the verdict on one case.
type Status string

// The verdicts.
const (
	// StatusPass: the backend, through the effect, did what the case asserts.
	StatusPass Status = "pass"
	// StatusFail: a rule was broken; CaseResult.Reason names it and gives
	// the evidence.
	StatusFail Status = "fail"
	// StatusSkip: the backend does not declare the capability the case
	// checks; CaseResult.Reason names it.
	StatusSkip Status = "skip"
)

// CaseResult is the verdict on one case.
type CaseResult struct {
	// Name is the case, one of conformance.CaseNames().
	Name string `json:"name"`
	// Status is the verdict.
	Status Status `json:"status"`
	// Reason explains the verdict. For a failure it names the rule broken
	// and the evidence, prefixed by the case name; for a skip it names the
	// capability that gates the case; for a pass it may carry a figure
	// worth reading (the host RSS growth, the ways the probe tried).
	Reason string `json:"reason,omitempty"`
	// Duration is how long the case took (nanoseconds in JSON).
	Duration time.Duration `json:"durationNs"`
	// Evidence holds the figures the case measured (how long the backend
	// took to stop, the CPU it burned after the limit, the host memory it
	// grew by, …), each with the bound it was held to, so that a pass is
	// evidence rather than a checkmark. A failing case keeps the figures
	// measured before the failure.
	Evidence []Figure `json:"evidence,omitempty"`
}

// Figure is one measurement a case made.
type Figure struct {
	// Name says what was measured ("stopAfterMs", "cpuAfterLimitMs", …).
	Name string `json:"name"`
	// Value is the measured figure, in Unit.
	Value float64 `json:"value"`
	// Unit is the figure's unit ("ms", "MiB", "runs", "keys", …).
	Unit string `json:"unit"`
	// Bound is the bound Value was held to, in Unit, and Rule how ("<=",
	// ">=", "=="); an empty Rule means the figure is informative only.
	Bound float64 `json:"bound,omitempty"`
	Rule  string  `json:"rule,omitempty"`
}

// String renders the figure as "name=value unit (rule bound)".
func (f Figure) String() string {
	s := f.Name + "=" + strconv.FormatFloat(f.Value, 'f', -1, 64)
	if f.Unit != "" {
		s += " " + f.Unit
	}
	if f.Rule != "" {
		s += fmt.Sprintf(" (%s %s)", f.Rule, strconv.FormatFloat(f.Bound, 'f', -1, 64))
	}
	return s
}

// Report is the outcome of a kit run against one backend. Its JSON form,
// json.Marshal(report), is what the command line prints:
//
//	{"language":"javascript",
//	 "capabilities":{"language":"javascript","network":"none","wallClock":"hard",
//	                 "memory":true,"cpu":false,"freshPerRun":true},
//	 "cases":[{"name":"echo","status":"pass","durationNs":1200000}, …]}
type Report struct {
	// Language is the backend's declared language.
	Language string `json:"language"`
	// Capabilities is what the backend declared; the gates were taken from
	// it.
	Capabilities spi.Capabilities `json:"capabilities"`
	// Cases holds one result per case run, in run order, after a failed
	// result named "probe" when the backend the declaration was read from
	// did not close within the kit's close timeout.
	Cases []CaseResult `json:"cases"`
	// Proofs says, for each declared capability (keys as in
	// CapabilityKeys: "network=none", "wallClock=hard", "memory", "cpu",
	// "freshPerRun"), which passing cases proved it and with which
	// measurements. A declared capability whose proving cases did not all
	// pass (or did not run) has an entry with Proven false.
	Proofs []Proof `json:"proofs"`
}

// Failed reports whether any case failed.
func (r *Report) Failed() bool {
	return len(r.FailedCases()) > 0
}

// FailedCases returns the names of the cases that failed, in run order.
func (r *Report) FailedCases() []string {
	if r == nil {
		return nil
	}
	var names []string
	for _, c := range r.Cases {
		if c.Status == StatusFail {
			names = append(names, c.Name)
		}
	}
	return names
}

// Proof is the evidence behind one declared capability.
type Proof struct {
	// Capability is the declaration, as in CapabilityKeys.
	Capability string `json:"capability"`
	// Proven is true when every case that measures the capability ran and
	// passed.
	Proven bool `json:"proven"`
	// By lists the measurements: "case: figure" for every figure of every
	// passing case that measures the capability, or "case: pass" for a
	// case whose proof is its verdict; a case that failed or did not run is
	// listed as "case: fail" or "case: not run".
	By []string `json:"by"`
}

// CapabilityKeys returns the keys of the capabilities caps declares, as
// Report.Proofs names them: "network=none" or "network=allowlist",
// "wallClock=hard", "memory", "cpu", "freshPerRun", "hostCalls", "deterministic". Weak declarations
// (network open, a soft wall clock) promise nothing and have no key.
func CapabilityKeys(caps spi.Capabilities) []string {
	var keys []string
	if caps.Network == spi.NetworkNone || caps.Network == spi.NetworkAllowlist {
		keys = append(keys, "network="+caps.Network.String())
	}
	if caps.WallClock == spi.WallClockHard {
		keys = append(keys, "wallClock=hard")
	}
	if caps.Memory {
		keys = append(keys, "memory")
	}
	if caps.CPU {
		keys = append(keys, "cpu")
	}
	if caps.FreshPerRun {
		keys = append(keys, "freshPerRun")
	}
	if caps.HostCalls {
		keys = append(keys, "hostCalls")
	}
	if caps.Deterministic {
		keys = append(keys, "deterministic")
	}
	return keys
}
