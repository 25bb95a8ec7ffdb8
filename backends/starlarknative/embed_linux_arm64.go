package starlarknative

import _ "embed"

// embeddedChild is the child for this architecture, built by go generate.
//
//go:embed child_linux_arm64
var embeddedChild []byte
