package cluster

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/csisim/csisim/drivers/manifests"
)

// TestNodePluginFollowsTheDaemonSet: with csisim's own deployment, the
// driver is in a node's CSINode only while the node DaemonSet's pod there
// runs — not at start, then once the pod runs, and no more once a
// nodeSelector edit has taken the pod away.
func TestNodePluginFollowsTheDaemonSet(t *testing.T) {
	set, err := manifests.Load("../../deploy/kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := Start(ctx, Config{Mock: true, Seed: 1, Nodes: []string{"node-a", "node-b"}, Deploy: set})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	drivers := func(node string) []string {
		t.Helper()
		cn, err := cs.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, d := range cn.Spec.Drivers {
			names = append(names, d.Name)
		}
		return names
	}
	if got := drivers("node-a"); len(got) != 0 {
		t.Errorf("before the loop ran, node-a's CSINode lists %v", got)
	}
	if len(c.DeployNotApplied()) == 0 {
		t.Error("the RBAC objects, which fakekube does not serve, are not named as not applied")
	}
	if err := c.RunFor(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"node-a", "node-b"} {
		if got := drivers(n); !slices.Equal(got, []string{c.DriverName()}) {
			t.Errorf("%s's CSINode lists %v once its pod runs", n, got)
		}
	}
	patch := []byte(`{"spec":{"template":{"spec":{"nodeSelector":{"kubernetes.io/hostname":"node-a"}}}}}`)
	if _, err := cs.AppsV1().DaemonSets("csisim").Patch(ctx, "csisim-node", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.RunFor(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := drivers("node-b"); len(got) != 0 {
		t.Errorf("node-b's CSINode lists %v with no pod of the DaemonSet there", got)
	}
	if got := drivers("node-a"); !slices.Equal(got, []string{c.DriverName()}) {
		t.Errorf("node-a's CSINode lists %v", got)
	}
	ds, err := cs.AppsV1().DaemonSets("csisim").Get(ctx, "csisim-node", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := ds.Status; st.DesiredNumberScheduled != 1 || st.NumberReady != 1 || st.UpdatedNumberScheduled != 1 || st.ObservedGeneration != 2 {
		t.Errorf("status %+v", st)
	}
}
