package provisioner

import (
	"fmt"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

const zoneKey = "topology.example/zone"

// zonedProvisioner is a provisioner whose listers see one node per zone.
func zonedProvisioner(t *testing.T, zones ...string) *Provisioner {
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	csiNodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, z := range zones {
		name := "node-" + z
		if err := nodes.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{zoneKey: z}}}); err != nil {
			t.Fatal(err)
		}
		if err := csiNodes.Add(&storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.CSINodeSpec{
			Drivers: []storagev1.CSINodeDriver{{Name: "drv", NodeID: name, TopologyKeys: []string{zoneKey}}}}}); err != nil {
			t.Fatal(err)
		}
	}
	return &Provisioner{cfg: Config{DriverName: "drv"}, nodes: corelisters.NewNodeLister(nodes), csiNodes: storagelisters.NewCSINodeLister(csiNodes)}
}

func zonesOf(ts []*csi.Topology) string {
	var out []string
	for _, t := range ts {
		out = append(out, t.GetSegments()[zoneKey])
	}
	return fmt.Sprint(out)
}

func TestAccessibilityRequirements(t *testing.T) {
	p := zonedProvisioner(t, "c", "a", "b")
	claim := func(name, node string) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}}}
		if node != "" {
			c.Annotations[storagehelpers.AnnSelectedNode] = node
		}
		return c
	}
	class := &storagev1.StorageClass{}
	// A selected node: every zone is requisite, sorted; preferred starts at
	// the node's zone and keeps the order.
	req, err := p.accessibilityRequirements(claim("data", "node-b"), class)
	if err != nil {
		t.Fatal(err)
	}
	if got := zonesOf(req.Requisite) + " " + zonesOf(req.Preferred); got != "[a b c] [b c a]" {
		t.Errorf("selected node-b: requisite preferred = %s", got)
	}
	// Immediate: the rotation follows the hash of the claim's name.
	req, err = p.accessibilityRequirements(claim("data", ""), class)
	if err != nil {
		t.Fatal(err)
	}
	i := int(claimNameOffset("data") % 3)
	want := []string{"a", "b", "c"}
	want = append(want[i:], want[:i]...)
	if got := zonesOf(req.Preferred); got != fmt.Sprint(want) {
		t.Errorf("immediate: preferred %s, want %v", got, want)
	}
	// allowedTopologies is the requisite.
	allowed := &storagev1.StorageClass{AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
		{Key: zoneKey, Values: []string{"c", "b"}}}}}}
	req, err = p.accessibilityRequirements(claim("data", "node-c"), allowed)
	if err != nil {
		t.Fatal(err)
	}
	if got := zonesOf(req.Requisite) + " " + zonesOf(req.Preferred); got != "[b c] [c b]" {
		t.Errorf("allowed b, c from node-c: requisite preferred = %s", got)
	}
	// A selected node without a CSINode goes back to the scheduler.
	if _, err := p.accessibilityRequirements(claim("data", "node-x"), class); err == nil {
		t.Error("a selected node without CSINode should fail")
	} else if _, ok := err.(errReschedule); !ok {
		t.Errorf("a selected node without CSINode: %v, want a reschedule", err)
	}
}
