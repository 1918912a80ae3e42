package cluster

import (
	"fmt"

	"github.com/csisim/csisim/fakekube"
	"github.com/csisim/csisim/sim/kubelet"
)

// nodeProxy is the kubelets' side of nodes/{name}/proxy for the API
// server: a simulated kubelet serves /metrics, with its volume stats
// metrics only (kubelet/volumestats.go); nothing else of the real
// kubelet's endpoints.
func (c *Cluster) nodeProxy(node, path string) ([]byte, string, error) {
	if path != "metrics" {
		return nil, "", &fakekube.UnservedPath{Path: path, Served: []string{"/metrics (its kubelet_volume_stats metrics only)"}}
	}
	c.nodesMu.Lock()
	var k *kubelet.Kubelet
	lost := false
	if parts := c.nodes[node]; parts != nil {
		k, lost = parts.kubelet, parts.lost
	}
	c.nodesMu.Unlock()
	if k == nil {
		return nil, "", fmt.Errorf("node %s has no simulated kubelet", node)
	}
	if lost {
		return nil, "", fmt.Errorf("node %s is lost: its kubelet does not answer", node)
	}
	body, err := k.VolumeStatsMetrics()
	return body, string(kubelet.VolumeStatsContentType), err
}
