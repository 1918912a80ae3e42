package realcluster

import (
	"fmt"
	"path"
	"slices"

	"github.com/csisim/csisim/drivers/faultproxy"
	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/realkube"
	"github.com/csisim/csisim/trace"
)

// sidecarMethods are the CSI calls each real sidecar makes to the
// controller plugin here, beyond the identity calls and
// ControllerGetCapabilities that both make: the external-provisioner
// provisions, deletes and (with --enable-capacity) asks for capacity; the
// external-attacher attaches, detaches and lists published volumes; the
// external-resizer expands and modifies; the csi-snapshotter takes,
// deletes and lists snapshots.
var sidecarMethods = map[string][]string{
	realkube.CSIProvisioner: {"CreateVolume", "DeleteVolume", "GetCapacity"},
	realkube.CSIAttacher:    {"ControllerPublishVolume", "ControllerUnpublishVolume", "ListVolumes"},
	realkube.CSIResizer:     {"ControllerExpandVolume", "ControllerModifyVolume"},
	realkube.CSISnapshotter: {"CreateSnapshot", "DeleteSnapshot", "ListSnapshots"},
}

// bothSidecars are the calls every sidecar makes.
var bothSidecars = append(faultproxy.ServiceMethods("Identity"), "ControllerGetCapabilities")

// nodeProxy names the proxy in front of a node's plugin.
func nodeProxy(node string) string { return "faultproxy:" + node }

// proxiesFor returns the proxies a CSI fault goes to — those in front of
// the controller plugin, one per sidecar, and those in front of the node
// plugins, one per node, which the simulated kubelets call through — or
// why it cannot be injected here. A fault with times counts per proxy, so
// it must select the calls of one sidecar or one node.
func (c *Cluster) proxiesFor(f fault.Fault) ([]string, error) {
	matches := func(methods []string) bool {
		return f.CSI.Method == "" || f.Kind == fault.CSIHeal || slices.ContainsFunc(methods, func(m string) bool {
			ok, _ := path.Match(f.CSI.Method, m)
			return ok
		})
	}
	var out []string
	if f.Plugin != fault.Node {
		for _, sidecar := range sidecars {
			if matches(append(slices.Clone(bothSidecars), sidecarMethods[sidecar]...)) {
				out = append(out, sidecar)
			}
		}
	}
	if f.Plugin != fault.Controller {
		nodeCalls := faultproxy.ServiceMethods("Node")
		if f.Plugin == fault.Node {
			// The kubelet's identity calls too (GetPluginInfo when the
			// plugin registers).
			nodeCalls = append(nodeCalls, faultproxy.ServiceMethods("Identity")...)
		}
		if matches(nodeCalls) {
			for _, node := range c.cfg.Nodes {
				if f.Node == "" || f.Node == node {
					out = append(out, nodeProxy(node))
				}
			}
		}
	}
	switch {
	case len(out) == 0:
		return nil, fault.Unsupported(f.Kind, backendName, fmt.Sprintf("no sidecar or kubelet here calls %s (the sidecars are %v; nodes %v)", f.CSI.Method, sidecars, c.cfg.Nodes))
	case f.Times > 0 && len(out) > 1:
		return nil, fault.Unsupported(f.Kind, backendName, fmt.Sprintf("%s is called through %v, each a proxy of its own, so times: %d would count per proxy; name the plugin (and the node) so that one proxy sees the calls, or leave times out", f.CSI.Method, out, f.Times))
	}
	if f.Kind != fault.CSIHeal {
		if _, err := faultproxy.RuleFor(f); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// injectCSIFault adds the fault's rule to the proxies of the sidecars it
// concerns, or for csi-heal removes the rules it heals from them.
func (c *Cluster) injectCSIFault(f fault.Fault) error {
	names, err := c.proxiesFor(f)
	if err != nil {
		return err
	}
	c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: "scenario", Verb: string(f.Kind), Object: f.Describe()})
	for _, p := range c.proxies {
		if !slices.Contains(names, p.Name()) {
			continue
		}
		if f.Kind == fault.CSIHeal {
			for _, rs := range p.Rules() {
				if faultproxy.Heals(f, rs.Rule) {
					p.RemoveRule(rs.ID)
				}
			}
			continue
		}
		r, err := faultproxy.RuleFor(f)
		if err != nil {
			return err
		}
		if _, err := p.AddRule(r); err != nil {
			return fmt.Errorf("%s on the proxy of %s: %w", f.Describe(), p.Name(), err)
		}
	}
	return nil
}
