package cluster

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/fakekube"
	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/sim/kubelet"
)

// startNode starts the node's plugin (unless it runs already, the first
// node's in the combined layout) and its kubelet, which registers the
// node and the plugin before the loop runs it.
func (c *Cluster) startNode(ctx context.Context, node string) error {
	pl, err := c.driver.startNode(ctx, node)
	if err != nil {
		return err
	}
	parts := &nodeParts{plugin: pl}
	c.nodesMu.Lock()
	c.nodes[node] = parts
	c.nodesMu.Unlock()
	agent := fault.KubeletComponent(node)
	conn, err := c.clients.dial(pl.proxy.Endpoint(), agent, c.traceName(c.driver))
	if err != nil {
		return err
	}
	cs := c.clients.client(fakekube.UserAgent("kubelet", agent))
	f, err := c.clients.kubeletInformers(node, cs)
	if err != nil {
		return err
	}
	labels := map[string]string{}
	if zone := c.cfg.Zones[node]; zone != "" {
		labels[corev1.LabelTopologyZone] = zone
	}
	nodeIP, podSubnet := kubelet.NodeNetwork(slices.Index(c.cfg.Nodes, node))
	k := kubelet.New(kubelet.Config{NodeName: node, DriverName: c.cfg.DriverName, Dir: c.root.Path("nodes", node, "kubelet"),
		SkipMountCheck: c.mountsNothing(), Labels: labels, Recorder: c.rec, NodeIP: nodeIP, PodSubnet: podSubnet,
		PluginFromPod: c.cfg.Deploy != nil, Timing: c.cfg.Timing, SELinuxEnabled: slices.Contains(c.cfg.SELinux, node), Fanout: c.clients.fanout,
		ContainerExits: c.containerExits()},
		cs, f, f, conn.Node, c.rt)
	if err := k.Register(ctx, conn.Identity); err != nil {
		return err
	}
	c.nodesMu.Lock()
	parts.kubelet = k
	c.nodesMu.Unlock()
	parts.identity = conn.Identity
	if err := c.startExtraNodePlugins(ctx, node, parts); err != nil {
		return err
	}
	c.components.run(agent, "kubelet", &process{name: agent}, k.Component())
	return nil
}
