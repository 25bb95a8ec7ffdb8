package effect

import "github.com/sandbank/sandbank/internal/textbound"

// MaxTextUnits bounds every text that comes from a script or a backend, in
// UTF-16 code units. A text cut at the bound ends with the marker
// "…[truncated]" (12 units), past the bound.
const MaxTextUnits = 2048

// truncationMarker is appended to a text that boundText cut short. It is
// outside the MaxTextUnits budget, so a bounded text is at most
// MaxTextUnits plus len(truncationMarker) UTF-16 units long.
const truncationMarker = textbound.Marker

// boundText makes s safe to store and to log: invalid UTF-8, UTF-8 encoded
// surrogates (WTF-8 or CESU-8, as an engine converting from UTF-16 may
// produce for a lone surrogate) and control characters other than '\n' and
// '\t' become U+FFFD, and the result keeps at most MaxTextUnits UTF-16 code
// units followed by truncationMarker when something was cut. A surrogate
// pair (a rune outside the BMP) is never cut in half.
//
// Every text that comes from a script, a backend or a script reader goes
// through boundText exactly once, in this package.
func boundText(s string) string { return boundTextTo(s, MaxTextUnits) }

// boundTextTo is boundText with a bound of maxUnits UTF-16 code units.
func boundTextTo(s string, maxUnits int) string { return textbound.Bound(s, maxUnits) }

// maxExcerptUnits bounds the excerpt of a caller's text that an error
// message may quote (see Excerpt): 128 UTF-16 code units, plus the
// truncation marker when the text was cut.
const maxExcerptUnits = 128

// Excerpt returns the part of a caller's text (an engine or language name,
// a flag's value, a field's name) that an error message may quote: s
// scrubbed as every text of a run is (invalid UTF-8, encoded surrogates
// and control characters other than '\n' and '\t' become U+FFFD) and cut
// to maxExcerptUnits UTF-16 code units followed by "…[truncated]". Every
// door (the effect, the registry, the HTTP server, the command line,
// Temporal) quotes caller text through Excerpt, so an error stays short
// whatever the caller sent, and still says what it was about.
func Excerpt(s string) string { return boundTextTo(s, maxExcerptUnits) }
