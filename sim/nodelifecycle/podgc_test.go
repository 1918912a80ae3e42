package nodelifecycle

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/csisim/csisim/sim/controller"
)

// newTestController is a controller on a fake API server and a fake
// clock, whose events are written at once.
func newTestController() (*Controller, *fake.Clientset, informers.SharedInformerFactory, *testingclock.FakeClock) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := controller.Runtime{Clock: clk, NewQueue: controller.NewQueue,
		NewEventRecorder: func(cs kubernetes.Interface, component, host string) (record.EventRecorder, func()) {
			return controller.NewSyncEventRecorder(cs, component, host, clk, nil, nil), func() {}
		}}
	return New(Clients{NodeLifecycle: client}, factory, rt), client, factory, clk
}

func TestOrphanedPodsGoAfterTheQuarantine(t *testing.T) {
	c, client, factory, clk := newTestController()
	ctx := context.Background()
	kept := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}
	for _, p := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "node-a"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}},
		{ObjectMeta: metav1.ObjectMeta{Name: "fine", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "node-b"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}},
	} {
		if err := factory.Core().V1().Pods().Informer().GetIndexer().Add(p); err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := factory.Core().V1().Nodes().Informer().GetIndexer().Add(kept); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Nodes().Create(ctx, kept, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	writes := func() string {
		var out []string
		for _, a := range client.Actions() {
			if v := a.GetVerb(); v != "get" && v != "list" && v != "create" {
				out = append(out, v+" "+a.GetSubresource())
			}
		}
		client.ClearActions()
		return strings.TrimSpace(strings.Join(out, ", "))
	}
	writes()

	c.CollectGarbage(ctx) // node-a found missing: quarantine starts
	clk.Step(orphanQuarantineTime - PodGCPeriod)
	c.CollectGarbage(ctx)
	if w := writes(); w != "" {
		t.Fatalf("wrote %q during the quarantine", w)
	}
	clk.Step(PodGCPeriod)
	c.CollectGarbage(ctx)
	if w := writes(); w != "patch status, delete" {
		t.Fatalf("writes = %q, want the orphan marked Failed then deleted", w)
	}
	if _, err := client.CoreV1().Pods("default").Get(ctx, "fine", metav1.GetOptions{}); err != nil {
		t.Errorf("the pod on an existing node went: %v", err)
	}
}

func TestTerminatingPodsOnOutOfServiceNodesGo(t *testing.T) {
	c, client, factory, clk := newTestController()
	ctx := context.Background()
	now := metav1.NewTime(clk.Now())
	lost := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", DeletionTimestamp: &now},
		Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if err := factory.Core().V1().Pods().Informer().GetIndexer().Add(pod); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nodes := factory.Core().V1().Nodes().Informer().GetIndexer()
	if err := nodes.Add(lost); err != nil {
		t.Fatal(err)
	}
	client.ClearActions()
	c.CollectGarbage(ctx)
	if n := len(client.Actions()); n != 0 {
		t.Fatalf("%d writes for a lost node without the out-of-service taint", n)
	}
	tainted := lost.DeepCopy()
	tainted.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}}
	if err := nodes.Update(tainted); err != nil {
		t.Fatal(err)
	}
	c.CollectGarbage(ctx)
	var verbs []string
	for _, a := range client.Actions() {
		verbs = append(verbs, a.GetVerb()+" "+a.GetSubresource())
	}
	if got := strings.Join(verbs, ", "); got != "patch status, delete " {
		t.Fatalf("writes = %q, want the pod marked Failed and force-deleted", got)
	}
}
