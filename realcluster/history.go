package realcluster

import (
	"github.com/csisim/csisim/sim/kubelet"
	"github.com/csisim/csisim/trace"
)

// History is the run's timeline with the entries' structured data, for the
// invariant checker.
func (c *Cluster) History() []trace.Entry { return c.rec.Entries() }

// KubeletMounts lists what is mounted under the nodes' kubelet directories.
func (c *Cluster) KubeletMounts() ([]string, error) {
	var dirs []string
	for _, node := range c.cfg.Nodes {
		dirs = append(dirs, c.root.Path("nodes", node, "kubelet"))
	}
	return kubelet.Mounts(dirs...)
}

// WritesRecordedLate: the timeline learns of the real API server's writes
// from its audit events and watches, after the calls they caused may have
// been recorded.
func (c *Cluster) WritesRecordedLate() bool { return true }
