package provisioner

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// supportsTopology says whether the driver has
// VOLUME_ACCESSIBILITY_CONSTRAINTS, as the sidecar asked at start.
func (p *Provisioner) supportsTopology() bool {
	return p.cfg.Capabilities.Plugin[csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS]
}

// term is one topology segment as the sidecar handles it: key=value
// pairs sorted by key.
type term []kv

type kv struct{ key, value string }

func termOf(seg map[string]string) term {
	t := term{}
	for k, v := range seg {
		t = append(t, kv{k, v})
	}
	slices.SortFunc(t, func(a, b kv) int { return strings.Compare(a.key, b.key) })
	return t
}

// compare orders terms: shorter first, then pair by pair.
func (t term) compare(o term) int {
	if len(t) != len(o) {
		return len(t) - len(o)
	}
	for i := range t {
		if c := strings.Compare(t[i].key, o[i].key); c != 0 {
			return c
		}
		if c := strings.Compare(t[i].value, o[i].value); c != 0 {
			return c
		}
	}
	return 0
}

// within reports whether every pair of t is in o.
func (t term) within(o term) bool {
	for _, p := range t {
		if !slices.Contains(o, p) {
			return false
		}
	}
	return true
}

func (t term) segments() map[string]string {
	m := map[string]string{}
	for _, p := range t {
		m[p.key] = p.value
	}
	return m
}

// errReschedule marks a failure that gives the claim back to the
// scheduler: the selected node or its CSINode is gone.
type errReschedule struct{ error }

// accessibilityRequirements says where the volume may be made, as the
// sidecar computes it without --strict-topology and with
// --immediate-topology (the defaults). Requisite: the class's
// allowedTopologies, or else every segment of the nodes that run the
// driver (for a selected node, those with the selected node's keys),
// sorted. Preferred: the same, rotated to start at the selected node's
// segment, or, without a selected node, by a hash of the claim's name (of
// its StatefulSet part, so that a StatefulSet's claims spread over zones).
func (p *Provisioner) accessibilityRequirements(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass) (*csi.TopologyRequirement, error) {
	selectedName := claim.Annotations[storagehelpers.AnnSelectedNode]
	var selected term
	var selectedKeys []string
	if selectedName != "" {
		cn, err := p.csiNodes.Get(selectedName)
		if apierrors.IsNotFound(err) {
			return nil, errReschedule{err}
		}
		if err != nil {
			return nil, err
		}
		selectedKeys = p.topologyKeys(cn)
		if len(selectedKeys) == 0 {
			return nil, fmt.Errorf("no topology key found for node %s", selectedName)
		}
		node, err := p.nodes.Get(selectedName)
		if apierrors.IsNotFound(err) {
			return nil, errReschedule{err}
		}
		if err != nil {
			return nil, err
		}
		var missing bool
		if selected, missing = nodeTerm(node, selectedKeys); missing {
			return nil, fmt.Errorf("topology labels from selected node %v does not match topology keys from CSINode %v", node.Labels, selectedKeys)
		}
	}

	var requisite []term
	if len(class.AllowedTopologies) > 0 {
		requisite = allowedTerms(class.AllowedTopologies)
	} else {
		var err error
		if requisite, err = p.clusterTerms(selectedKeys); err != nil {
			return nil, err
		}
		if requisite == nil {
			return nil, nil // no node reports topology keys yet
		}
		if len(requisite) == 0 {
			return nil, fmt.Errorf("no available topology found")
		}
	}
	if len(requisite) == 0 {
		return nil, nil
	}
	slices.SortFunc(requisite, term.compare)
	requisite = slices.CompactFunc(requisite, func(a, b term) bool { return a.compare(b) == 0 })

	var preferred []term
	if selectedName == "" {
		i := int(claimNameOffset(claim.Name) % uint32(len(requisite)))
		preferred = append(slices.Clone(requisite[i:]), requisite[:i]...)
	} else {
		for i, t := range requisite {
			if t.within(selected) {
				preferred = append(slices.Clone(requisite[i:]), requisite[:i]...)
				break
			}
		}
		if preferred == nil {
			return nil, fmt.Errorf("topology %v from selected node %q is not in requisite: %v", selected, selectedName, requisite)
		}
	}
	req := &csi.TopologyRequirement{}
	for _, t := range requisite {
		req.Requisite = append(req.Requisite, &csi.Topology{Segments: t.segments()})
	}
	for _, t := range preferred {
		req.Preferred = append(req.Preferred, &csi.Topology{Segments: t.segments()})
	}
	return req, nil
}

// claimNameOffset is where the rotation of an immediate claim's preferred
// topologies starts: an FNV-1 hash of its name, and for a name that ends
// in -<number>, as a StatefulSet's claims do (claim-set-0), of the part
// before the last dash of the rest (set) plus the number, so that the
// claims of one StatefulSet member stay together and its members spread.
func claimNameOffset(name string) uint32 {
	hashed, index := name, uint32(0)
	if dash := strings.LastIndexByte(name, '-'); dash >= 0 {
		if n, err := strconv.ParseUint(name[dash+1:], 10, 32); err == nil {
			index = uint32(n)
			hashed = name[:dash]
			if d := strings.LastIndexByte(hashed, '-'); d >= 0 {
				hashed = hashed[d+1:]
			}
		}
	}
	h := fnv.New32()
	_, _ = h.Write([]byte(hashed))
	return h.Sum32() + index
}

// topologyKeys are the keys the driver registered in a CSINode.
func (p *Provisioner) topologyKeys(cn *storagev1.CSINode) []string {
	for _, d := range cn.Spec.Drivers {
		if d.Name == p.cfg.DriverName {
			return d.TopologyKeys
		}
	}
	return nil
}

// clusterTerms are the segments of the nodes whose driver registered
// keys: for each distinct key set (or only keys, for a selected node),
// the nodes that registered all of them and carry their labels. Nil
// means that no node registered any key.
func (p *Provisioner) clusterTerms(keys []string) ([]term, error) {
	csiNodes, err := p.csiNodes.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("error listing CSINodes: %v", err)
	}
	registered := map[string][]string{}
	var keySets [][]string
	for _, cn := range csiNodes {
		k := slices.Clone(p.topologyKeys(cn))
		if len(k) == 0 {
			continue
		}
		slices.Sort(k)
		registered[cn.Name] = k
		if !slices.ContainsFunc(keySets, func(s []string) bool { return slices.Equal(s, k) }) {
			keySets = append(keySets, k)
		}
	}
	if keys != nil {
		keySets = [][]string{keys}
	} else if len(keySets) == 0 {
		return nil, nil
	}
	slices.SortFunc(keySets, slices.Compare)
	nodes, err := p.nodes.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("error listing nodes: %v", err)
	}
	terms := []term{}
	for _, ks := range keySets {
		for _, n := range nodes {
			has := registered[n.Name]
			if !slices.ContainsFunc(ks, func(k string) bool { return !slices.Contains(has, k) }) {
				if t, missing := nodeTerm(n, ks); !missing {
					terms = append(terms, t)
				}
			}
		}
	}
	if len(terms) == 0 && keys == nil {
		return terms, fmt.Errorf("topologyKeys %v were not found on any nodes", keySets)
	}
	return terms, nil
}

// nodeTerm is a node's segment for keys; missing when a label is absent.
func nodeTerm(node *corev1.Node, keys []string) (term, bool) {
	seg := map[string]string{}
	for _, k := range keys {
		v, ok := node.Labels[k]
		if !ok {
			return nil, true
		}
		seg[k] = v
	}
	return termOf(seg), false
}

// allowedTerms flattens allowedTopologies: each term's expressions with
// every combination of their values.
func allowedTerms(terms []corev1.TopologySelectorTerm) []term {
	var out []term
	for _, t := range terms {
		var segs []map[string]string
		for _, expr := range t.MatchLabelExpressions {
			var next []map[string]string
			for _, v := range expr.Values {
				if len(segs) == 0 {
					next = append(next, map[string]string{expr.Key: v})
					continue
				}
				for _, seg := range segs {
					s := maps.Clone(seg)
					s[expr.Key] = v
					next = append(next, s)
				}
			}
			segs = next
		}
		for _, s := range segs {
			out = append(out, termOf(s))
		}
	}
	return out
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

// driverSegments are the distinct topology segments of the nodes that run
// the driver, sorted, for capacity tracking.
func (p *Provisioner) driverSegments() []map[string]string {
	terms, _ := p.clusterTerms(nil)
	slices.SortFunc(terms, term.compare)
	terms = slices.CompactFunc(terms, func(a, b term) bool { return a.compare(b) == 0 })
	var out []map[string]string
	for _, t := range terms {
		out = append(out, t.segments())
	}
	return out
}

func equalSegments(a, b map[string]string) bool { return termOf(a).compare(termOf(b)) == 0 }

// segmentString is a term as text: key=value pairs, by key, comma separated.
func segmentString(t term) string {
	var parts []string
	for _, p := range t {
		parts = append(parts, p.key+"="+p.value)
	}
	return strings.Join(parts, ",")
}
