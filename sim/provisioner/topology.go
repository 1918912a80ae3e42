package provisioner

import (
	"context"
	"hash/fnv"
	"sort"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// supportsTopology asks the driver, once, whether it has
// VOLUME_ACCESSIBILITY_CONSTRAINTS, as the sidecar does at start.
func (p *Provisioner) supportsTopology(ctx context.Context) bool {
	p.topologyOnce.Do(func() {
		if p.cfg.Identity == nil {
			return
		}
		resp, err := p.cfg.Identity.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
		if err != nil {
			return
		}
		for _, c := range resp.GetCapabilities() {
			if c.GetService().GetType() == csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS {
				p.topology = true
			}
		}
	})
	return p.topology
}

// accessibilityRequirements says where the volume may be made, as the
// sidecar computes it without --strict-topology: the requisite segments are
// those of the nodes that run the driver (or the class's allowedTopologies),
// and the preferred ones the same, starting with the selected node's for
// WaitForFirstConsumer, else rotated by a hash of the volume name so that
// volumes spread.
func (p *Provisioner) accessibilityRequirements(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, pvName string) *csi.TopologyRequirement {
	var requisite []map[string]string
	if len(class.AllowedTopologies) > 0 {
		requisite = allowedSegments(class.AllowedTopologies)
	} else {
		requisite = p.driverSegments()
	}
	if len(requisite) == 0 {
		return nil
	}
	preferred := append([]map[string]string(nil), requisite...)
	selected := p.selectedSegment(claim)
	if selected != nil {
		for i, seg := range preferred {
			if equalSegments(seg, selected) {
				preferred = append([]map[string]string{seg}, append(preferred[:i:i], preferred[i+1:]...)...)
				break
			}
		}
	} else {
		h := fnv.New32a()
		_, _ = h.Write([]byte(pvName))
		n := int(h.Sum32() % uint32(len(preferred)))
		preferred = append(preferred[n:], preferred[:n]...)
	}
	req := &csi.TopologyRequirement{}
	for _, seg := range requisite {
		req.Requisite = append(req.Requisite, &csi.Topology{Segments: seg})
	}
	for _, seg := range preferred {
		req.Preferred = append(req.Preferred, &csi.Topology{Segments: seg})
	}
	return req
}

// driverSegments are the distinct topology segments of the nodes whose
// CSINode lists the driver, in a stable order.
func (p *Provisioner) driverSegments() []map[string]string {
	csiNodes, _ := p.csiNodes.List(labels.Everything())
	var out []map[string]string
	for _, cn := range csiNodes {
		if seg := p.segmentOf(cn.Name, cn); seg != nil && !containsSegment(out, seg) {
			out = append(out, seg)
		}
	}
	sort.Slice(out, func(i, j int) bool { return segmentKey(out[i]) < segmentKey(out[j]) })
	return out
}

func (p *Provisioner) selectedSegment(claim *corev1.PersistentVolumeClaim) map[string]string {
	name := claim.Annotations[annSelectedNode]
	if name == "" {
		return nil
	}
	cn, err := p.csiNodes.Get(name)
	if err != nil {
		return nil
	}
	return p.segmentOf(name, cn)
}

// segmentOf is a node's segment for the driver: its CSINode's topology keys
// with the values of the node's labels.
func (p *Provisioner) segmentOf(nodeName string, cn *storagev1.CSINode) map[string]string {
	node, err := p.nodes.Get(nodeName)
	if err != nil {
		return nil
	}
	for _, d := range cn.Spec.Drivers {
		if d.Name != p.cfg.DriverName || len(d.TopologyKeys) == 0 {
			continue
		}
		seg := map[string]string{}
		for _, k := range d.TopologyKeys {
			v, ok := node.Labels[k]
			if !ok {
				return nil
			}
			seg[k] = v
		}
		return seg
	}
	return nil
}

func allowedSegments(terms []corev1.TopologySelectorTerm) []map[string]string {
	var out []map[string]string
	for _, term := range terms {
		segs := []map[string]string{{}}
		for _, expr := range term.MatchLabelExpressions {
			var next []map[string]string
			for _, seg := range segs {
				for _, v := range expr.Values {
					s := map[string]string{expr.Key: v}
					for k, old := range seg {
						s[k] = old
					}
					next = append(next, s)
				}
			}
			segs = next
		}
		for _, s := range segs {
			if len(s) > 0 && !containsSegment(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

func segmentKey(seg map[string]string) string {
	keys := make([]string, 0, len(seg))
	for k := range seg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := ""
	for _, k := range keys {
		s += k + "=" + seg[k] + ","
	}
	return s
}

func equalSegments(a, b map[string]string) bool { return segmentKey(a) == segmentKey(b) }

func containsSegment(list []map[string]string, seg map[string]string) bool {
	for _, s := range list {
		if equalSegments(s, seg) {
			return true
		}
	}
	return false
}

// nodeAffinityOf turns a volume's accessible topology into the PV's
// required node affinity: one term per segment.
func nodeAffinityOf(topologies []*csi.Topology) *corev1.VolumeNodeAffinity {
	if len(topologies) == 0 {
		return nil
	}
	sel := &corev1.NodeSelector{}
	for _, t := range topologies {
		keys := make([]string, 0, len(t.GetSegments()))
		for k := range t.GetSegments() {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var term corev1.NodeSelectorTerm
		for _, k := range keys {
			term.MatchExpressions = append(term.MatchExpressions, corev1.NodeSelectorRequirement{
				Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{t.GetSegments()[k]}})
		}
		sel.NodeSelectorTerms = append(sel.NodeSelectorTerms, term)
	}
	return &corev1.VolumeNodeAffinity{Required: sel}
}
