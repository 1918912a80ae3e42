// Package library is csisim's library of scenarios (the YAML files beside
// this one, with their manifests), built into the binary so that `csisim
// test` runs it also when csisim was installed with `go install`, as a
// driver repository's CI does, with no checkout of csisim at hand.
package library

import "embed"

// FS holds the scenarios (NAME.yaml) and the files they refer to, one
// directory down: the manifests they apply (manifests/) and the steps
// they include (steps/).
//
//go:embed *.yaml */*.yaml
var FS embed.FS
