package python

import (
	"fmt"
	"regexp"
	"slices"
)

// MaxPackages bounds Options.Packages: each is imported on the host when
// the machine is checked, and by the zygote.
const MaxPackages = 32

// packageName is what Options.Packages accepts: a top-level import name.
var packageName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckPackages validates an allow-list of packages as New checks
// Options.Packages (at most MaxPackages top-level import names, such as
// numpy) and returns it sorted, without duplicates. A tenants document's
// packages are checked with it too.
func CheckPackages(names []string) ([]string, error) {
	if len(names) > MaxPackages {
		return nil, fmt.Errorf("python: Packages holds %d names, at most %d", len(names), MaxPackages)
	}
	out := slices.Clone(names)
	for _, n := range out {
		if !packageName.MatchString(n) {
			if len(n) > 64 {
				n = n[:64] + "..." // the message quotes at most this much
			}
			return nil, fmt.Errorf("python: Packages holds %q, want a top-level import name (numpy, pandas, matplotlib)", n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
