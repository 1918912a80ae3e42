package cluster

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/trace"
)

// TestInjectFaultLive injects faults into a realtime cluster whose clock
// runs 50 times as fast as the wall clock, as csisim serve --speed 50 does:
// the lost node is Unknown within about a second of wall time (50 s of
// the node controller's grace period), and faults the cluster cannot take
// are refused with the reason.
func TestInjectFaultLive(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx, Config{Nodes: nodeNames(2), Mock: true, Seed: 1, Realtime: true, Speed: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	node := c.Nodes()[1]
	if err := c.InjectFaultLive(ctx, fault.Fault{Kind: fault.NodeLoss, Node: node}); err != nil {
		t.Fatalf("node-loss: %v", err)
	}
	// In the timeline, the fault is a person's (csisim fault), not the
	// scenario's.
	var faults []string
	for _, e := range c.Recorder().Filter(trace.Fault) {
		faults = append(faults, e.Actor+" "+e.Verb+" "+e.Object)
	}
	if want := []string{LiveFaultActor + " node-loss Node " + node}; !slices.Equal(faults, want) {
		t.Errorf("FAULT entries %q, want %q", faults, want)
	}
	for _, tt := range []struct {
		f    fault.Fault
		want string
	}{
		{fault.Fault{Kind: fault.NodeLoss, Node: node}, "already lost"},
		{fault.Fault{Kind: fault.MissingMountPropagation, Node: node}, "the mock driver mounts nothing"},
	} {
		if err := c.InjectFaultLive(ctx, tt.f); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error saying %q", tt.f.Describe(), err, tt.want)
		}
	}
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ready := readyStatus(n); ready == corev1.ConditionUnknown {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("node %s is still Ready=%s 30 s (25 min of cluster time) after it was lost", node, ready)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestInjectFaultLiveNeedsARealtimeCluster(t *testing.T) {
	err := (&Cluster{}).InjectFaultLive(context.Background(), fault.Fault{Kind: fault.NodeLoss, Node: "node-1"})
	if err == nil || !strings.Contains(err.Error(), "needs a realtime cluster") {
		t.Errorf("InjectFaultLive() = %v, want a refusal", err)
	}
}

func TestSpeedNeedsEverySimulatedComponent(t *testing.T) {
	for _, cfg := range []Config{{Speed: 2}, {Speed: 2, Realtime: true, Without: []string{"external-attacher"}}} {
		if _, err := Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "speed 2 needs a realtime cluster") {
			t.Errorf("Start(%+v) = %v, want a refusal", cfg, err)
		}
	}
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status
		}
	}
	return ""
}
