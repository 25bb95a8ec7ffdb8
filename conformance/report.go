package conformance

import "github.com/sandbank/sandbank/conformance/verdict"

// The report's types live in package verdict, which a program that only
// reads reports imports without linking the kit (its cases and the hostile
// fixtures); the kit names them here too, so that a backend's test
// reads one package.
type (
	// Report is verdict.Report: the outcome of a kit run.
	Report = verdict.Report
	// CaseResult is verdict.CaseResult: the verdict on one case.
	CaseResult = verdict.CaseResult
	// Figure is verdict.Figure: one measurement a case made.
	Figure = verdict.Figure
	// Proof is verdict.Proof: the evidence behind one declared capability.
	Proof = verdict.Proof
	// Status is verdict.Status: the verdict on one case.
	Status = verdict.Status
)

// The verdicts, as in package verdict.
const (
	StatusPass = verdict.StatusPass
	StatusFail = verdict.StatusFail
	StatusSkip = verdict.StatusSkip
)
