package cluster

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/fakekube"
	"github.com/csisim/csisim/sim/kubelet"
)

// containerLogs is the kubelets' side of pods/log for the API server: the
// log the pod's node's kubelet wrote for the container. It reads the
// node's files, not a kubelet's memory, so it serves the logs across a
// kubelet restart as a real node's /var/log/pods does.
func (c *Cluster) containerLogs(pod *corev1.Pod, container, containerID string) ([]fakekube.LogLine, error) {
	if !slices.Contains(c.cfg.Nodes, pod.Spec.NodeName) {
		return nil, nil // a node without a simulated kubelet (or a real one's): no log here
	}
	lines, err := kubelet.ReadContainerLog(c.root.Path("nodes", pod.Spec.NodeName, "kubelet"), pod, container, containerID)
	if err != nil {
		return nil, err
	}
	out := make([]fakekube.LogLine, len(lines))
	for i, l := range lines {
		out[i] = fakekube.LogLine{Time: l.Time, Text: l.Text}
	}
	return out, nil
}
