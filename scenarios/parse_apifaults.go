package scenario

import (
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// The API-layer fault steps.
const (
	// FaultAPIConflict answers a component's next writes that carry a
	// resourceVersion with 409 Conflict.
	FaultAPIConflict = "api-conflict"
	// FaultWatchDrop makes a component's informer of one kind miss its
	// next events, until its reflector lists again.
	FaultWatchDrop = "watch-drop"
)

// watchKinds maps the kinds a watch-drop can name to their resources: the
// kinds the simulated components have informers of.
var watchKinds = map[string]string{
	"Pod": "pods", "Node": "nodes", "PersistentVolumeClaim": "persistentvolumeclaims",
	"PersistentVolume": "persistentvolumes", "StorageClass": "storageclasses", "CSIDriver": "csidrivers",
	"CSINode": "csinodes", "VolumeAttachment": "volumeattachments", "CSIStorageCapacity": "csistoragecapacities",
	"Lease": "leases",
}

// apiFault reads api-conflict: {component: NAME, times: N} and
// watch-drop: {component: NAME, kind: KIND, times: N}. kind is a kind
// (Pod) or its resource (pods).
func (p *parser) apiFault(n *yaml.Node, step string) *Fault {
	allowed := []string{"component", "times"}
	if step == FaultWatchDrop {
		allowed = append(allowed, "kind")
	}
	f, ok := p.mapping(n, step, allowed...)
	if !ok {
		return nil
	}
	for _, k := range allowed {
		if !f.has(k) {
			if step == FaultAPIConflict {
				p.fail(n, "%s needs component: (its user agent, e.g. external-provisioner) and times: (how many of its writes get 409 Conflict)", step)
			} else {
				p.fail(n, "%s needs component: (its user agent, e.g. attachdetach-controller), kind: (e.g. Pod) and times: (how many events its informer loses)", step)
			}
			return nil
		}
	}
	fault := &Fault{Type: step}
	if fault.Component, ok = p.nonEmpty(f.vals["component"], "component"); !ok {
		return nil
	}
	if fault.Times, ok = p.count(f.vals["times"], "times"); !ok {
		return nil
	}
	if fault.Times < 1 {
		p.fail(f.vals["times"], "times must be at least 1")
		return nil
	}
	if step == FaultWatchDrop {
		kind, ok := p.nonEmpty(f.vals["kind"], "kind")
		if !ok {
			return nil
		}
		if fault.Resource = watchResource(kind); fault.Resource == "" {
			var kinds []string
			for k := range watchKinds {
				kinds = append(kinds, k)
			}
			slices.Sort(kinds)
			p.fail(f.vals["kind"], "kind %q is none the components watch: %s", kind, strings.Join(kinds, ", "))
			return nil
		}
	}
	return fault
}

// watchResource is the resource of a kind or resource name, "" if none.
func watchResource(kind string) string {
	for k, res := range watchKinds {
		if strings.EqualFold(kind, k) || strings.EqualFold(kind, res) {
			return res
		}
	}
	return ""
}
