package scenarios

import (
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/csisim/csisim/invariant"
)

// Expect is what a scenario expects of the run besides its steps: a bug
// reproduction names the invariants it breaks, so that it passes while the
// bug is there and fails once it is gone (or breaks something else).
type Expect struct {
	// Violations are the names of the invariants the run must violate;
	// every other invariant must hold.
	Violations []string
	// Line is where expect: is in the file, for messages.
	Line int
}

// expect reads `expect: {violations: [name, ...]}`.
func (p *parser) expect(n *yaml.Node) Expect {
	e := Expect{Line: resolve(n).Line}
	f, ok := p.mapping(n, "expect", "violations")
	if !ok || !f.has("violations") {
		if ok {
			p.fail(n, "expect needs violations: the invariants the run is expected to violate (%s)", strings.Join(invariant.Names(), ", "))
		}
		return e
	}
	seen := map[string]bool{}
	e.Violations, _ = p.textList(f.vals["violations"], "violations", func(item *yaml.Node, name string) bool {
		switch {
		case !invariant.Known(name):
			p.fail(item, "unknown invariant %q%s; the invariants are %s", name, didYouMean(name, invariant.Names()), strings.Join(invariant.Names(), ", "))
			return false
		case seen[name]:
			p.fail(item, "invariant %q is listed twice", name)
			return false
		}
		seen[name] = true
		return true
	})
	return e
}
