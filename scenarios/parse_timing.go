package scenarios

import (
	"fmt"

	yaml "go.yaml.in/yaml/v3"

	"github.com/csisim/csisim/timing"
)

// clusterTiming reads cluster.timing: {speedup: N}, the cluster's timing of
// node loss divided by N (package timing), for a node-loss story that a
// real control plane would otherwise take a quarter of an hour over.
func (p *parser) clusterTiming(n *yaml.Node) timing.Timing {
	f, ok := p.mapping(n, "timing", "speedup")
	if !ok {
		return timing.Timing{}
	}
	if !f.has("speedup") {
		p.fail(n, "timing needs speedup: how many times shorter the node-loss timers run, e.g. {speedup: 10}")
		return timing.Timing{}
	}
	i, ok := p.count(f.vals["speedup"], "speedup")
	if !ok {
		return timing.Timing{}
	}
	t := timing.Timing{Speedup: i}
	if i < 2 {
		p.fail(f.vals["speedup"], "speedup %d changes nothing: leave timing out for v1.37's timing, or divide it by 2 to %d", i, timing.MaxSpeedup)
		return timing.Timing{}
	}
	if err := t.Validate(); err != nil {
		p.fail(f.vals["speedup"], "%s", err)
		return timing.Timing{}
	}
	return t
}

// timingRefusal says why a backend started with have cannot run a
// scenario that asks for want, or "".
func timingRefusal(want, have timing.Timing) string {
	if want.Same(have) {
		return ""
	}
	words := func(t timing.Timing) string {
		if !t.Scaled() {
			return "v1.37's timing"
		}
		return fmt.Sprintf("timing sped up %d times", t.Speedup)
	}
	return fmt.Sprintf("it asks for %s (cluster.timing), and this backend was started with %s", words(want), words(have))
}
