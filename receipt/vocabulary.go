package receipt

import (
	"strings"

	"github.com/sandbank/sandbank/record"
)

// The outcome and limit-kind vocabularies, derived from effect's closed
// enums: a receipt's outcome is record.OutcomeOK, a Code's name,
// record.OutcomeInfrastructure or record.OutcomeCanceled, and its limit
// kind a LimitKind's name.

// enum is a closed set of effect's: valid from 1 up, each with a name.
type enum interface {
	~int
	Valid() bool
	String() string
}

// named returns the value of the closed set E whose name is s.
func named[E enum](s string) (E, bool) {
	for v := E(1); v.Valid(); v++ {
		if s == v.String() {
			return v, true
		}
	}
	return 0, false
}

// names lists the names of the closed set E.
func names[E enum]() []string {
	var out []string
	for v := E(1); v.Valid(); v++ {
		out = append(out, v.String())
	}
	return out
}

// outcomeNames lists the outcome vocabulary, for a reason.
func outcomeNames() string {
	all := append([]string{record.OutcomeOK}, names[record.Code]()...)
	return strings.Join(append(all, record.OutcomeInfrastructure, record.OutcomeCanceled), ", ")
}

// limitKindNames lists the limit-kind vocabulary, for a reason.
func limitKindNames() string { return strings.Join(names[record.LimitKind](), ", ") }
