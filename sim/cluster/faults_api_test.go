package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/trace"
)

func TestCanInjectAPI(t *testing.T) {
	c, err := Start(context.Background(), Config{Nodes: nodeNames(1), Mock: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		f    fault.Fault
		want string // "" for injectable
	}{
		{fault.Fault{Kind: fault.APIConflict, Component: "external-provisioner", Times: 3}, ""},
		{fault.Fault{Kind: fault.APIConflict, Component: "kubelet:node-1", Times: 1}, "csisim's kubelet:node-1 does not write as the real one where a conflict can occur"},
		{fault.Fault{Kind: fault.APIConflict, Component: "default-scheduler", Times: 1}, "csisim's default-scheduler does not write as the real one"},
		{fault.Fault{Kind: fault.APIConflict, Component: "attachdetach-controller", Times: 1}, ""},
		{fault.Fault{Kind: fault.APIConflict, Component: "pod-garbage-collector", Times: 1}, ""},
		{fault.Fault{Kind: fault.WatchDrop, Component: "attachdetach-controller", Resource: "pods", Times: 1}, ""},
		{fault.Fault{Kind: fault.WatchDrop, Component: "kubelet:node-1", Resource: "pods", Times: 1}, ""},
		{fault.Fault{Kind: fault.APIConflict, Component: "csi-provisioner", Times: 1}, `there is no component "csi-provisioner" (the simulated ones: persistentvolume-binder,`},
		{fault.Fault{Kind: fault.APIConflict, Component: "external-provisioner"}, "times must be at least 1, not 0"},
		{fault.Fault{Kind: fault.WatchDrop, Component: "pod-garbage-collector", Resource: "pods", Times: 1}, `there is no component "pod-garbage-collector"`},
		{fault.Fault{Kind: fault.WatchDrop, Component: "external-attacher", Resource: "secrets", Times: 1},
			`external-attacher has no informer of "secrets" (its informers: csidrivers, csinodes, csistoragecapacities, leases, nodes,`},
		{fault.Fault{Kind: fault.NodeLoss, Node: "node-1"}, "it is not an API-layer fault"},
	} {
		err := c.canInjectAPI(tc.f)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want it injectable", tc.f.Describe(), err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error with %q", tc.f.Describe(), err, tc.want)
		case tc.want != "":
			var unsupported *fault.UnsupportedError
			if !errors.As(err, &unsupported) || unsupported.Kind != tc.f.Kind {
				t.Errorf("%s: %T, want a *fault.UnsupportedError of its kind", tc.f.Describe(), err)
			}
		}
	}
}

// TestAPIConflictInTheTimeline: the fault and each refused write are in
// the timeline, the latter with the error the component got.
func TestAPIConflictInTheTimeline(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx, Config{Nodes: nodeNames(1), Mock: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.injectAPIFault(ctx, fault.Fault{Kind: fault.APIConflict, Component: "node-controller", Times: 1}); err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(c.api.RESTConfig("node-controller"))
	node, err := cs.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Labels["refused"] = "yes"
	if _, err := cs.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err == nil {
		t.Fatal("the update was not refused")
	}
	var faults, refused []trace.Entry
	for _, e := range c.rec.Entries() {
		switch {
		case e.Kind == trace.Fault:
			faults = append(faults, e)
		case e.Kind == trace.API && e.Err != "":
			refused = append(refused, e)
		}
	}
	if len(faults) != 1 || faults[0].Verb != "api-conflict" || faults[0].Object != "node-controller" {
		t.Errorf("FAULT entries %v, want one api-conflict of node-controller", faults)
	}
	want := `Operation cannot be fulfilled on nodes "node-1": the object has been modified; please apply your changes to the latest version and try again`
	if len(refused) != 1 || refused[0].Actor != "node-controller" || refused[0].Verb != "update" ||
		refused[0].Object != "Node node-1" || refused[0].Err != want {
		t.Errorf("failed writes in the timeline %v, want the refused update of Node node-1 with %q", refused, want)
	}
}
