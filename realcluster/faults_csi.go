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
// external-attacher attaches, detaches and lists published volumes.
var sidecarMethods = map[string][]string{
	realkube.CSIProvisioner: {"CreateVolume", "DeleteVolume", "GetCapacity"},
	realkube.CSIAttacher:    {"ControllerPublishVolume", "ControllerUnpublishVolume", "ListVolumes"},
}

// bothSidecars are the calls every sidecar makes.
var bothSidecars = append(faultproxy.ServiceMethods("Identity"), "ControllerGetCapabilities")

// controllerProxiesFor returns the sidecars whose proxies a CSI fault goes
// to, or why it cannot be injected here. Only the controller plugin has
// proxies in front of it: the simulated kubelets call their node plugins
// directly. A fault with times counts per proxy, so it must select the
// calls of one sidecar.
func controllerProxiesFor(f fault.Fault) ([]string, error) {
	if f.Plugin == fault.Node {
		return nil, fault.Unsupported(f.Kind, backendName, "the simulated kubelets call their node plugins directly, with no fault proxy in between; CSI faults on node plugins run on the simulator")
	}
	if f.Plugin == "" && f.CSI.Method != "" {
		for _, m := range faultproxy.ServiceMethods("Node") {
			if ok, _ := path.Match(f.CSI.Method, m); ok {
				return nil, fault.Unsupported(f.Kind, backendName, fmt.Sprintf("method %s selects node plugin calls (%s), which no fault proxy sees here; add plugin: controller to fault only the controller plugin's calls", f.CSI.Method, m))
			}
		}
	}
	var out []string
	for _, sidecar := range sidecars {
		if f.CSI.Method == "" || f.Kind == fault.CSIHeal || slices.ContainsFunc(append(slices.Clone(bothSidecars), sidecarMethods[sidecar]...), func(m string) bool {
			ok, _ := path.Match(f.CSI.Method, m)
			return ok
		}) {
			out = append(out, sidecar)
		}
	}
	switch {
	case len(out) == 0:
		return nil, fault.Unsupported(f.Kind, backendName, fmt.Sprintf("no sidecar here calls %s (the sidecars are %v)", f.CSI.Method, sidecars))
	case f.Times > 0 && len(out) > 1:
		return nil, fault.Unsupported(f.Kind, backendName, fmt.Sprintf("%s is called by %v, each through a proxy of its own, so times: %d would count per sidecar; fault a method only one sidecar calls, or leave times out", f.CSI.Method, out, f.Times))
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
	names, err := controllerProxiesFor(f)
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
