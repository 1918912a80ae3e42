package daemonset

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/sim/controller"
)

// fixture is a controller over a fake clientset holding objs, with its
// caches filled with them.
type fixture struct {
	c      *Controller
	cs     *fake.Clientset
	events *record.FakeRecorder
}

func newFixture(t *testing.T, objs ...runtime.Object) fixture {
	t.Helper()
	cs := fake.NewClientset(objs...)
	n := 0
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if p, ok := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod); ok && p.Name == "" {
			n++
			p.Name = fmt.Sprintf("%s%05d", p.GenerateName, n)
		}
		return false, nil, nil
	})
	f := informers.NewSharedInformerFactory(cs, 0)
	events := record.NewFakeRecorder(20)
	rt := controller.Runtime{Clock: clock.RealClock{}, NewQueue: controller.NewQueue,
		NewEventRecorder: func(kubernetes.Interface, string, string) (record.EventRecorder, func()) { return events, func() {} }}
	c := New(cs, f, rt)
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *appsv1.DaemonSet:
			err = f.Apps().V1().DaemonSets().Informer().GetIndexer().Add(o)
		case *corev1.Node:
			err = f.Core().V1().Nodes().Informer().GetIndexer().Add(o)
		case *corev1.Pod:
			err = f.Core().V1().Pods().Informer().GetIndexer().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return fixture{c: c, cs: cs, events: events}
}

func (fx fixture) reasons() []string {
	var out []string
	for len(fx.events.Events) > 0 {
		e := <-fx.events.Events
		out = append(out, e)
	}
	return out
}

func TestSyncPlacesOnePodPerEligibleNode(t *testing.T) {
	ds := daemonSet(nil)
	ds.Annotations = map[string]string{appsv1.DeprecatedTemplateGeneration: "1"}
	fx := newFixture(t, ds, node("node-a", nil), node("node-b", nil, taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule)),
		node("node-c", nil))
	ctx := context.Background()
	if err := fx.c.sync(ctx, "csi/node-plugin"); err != nil {
		t.Fatal(err)
	}
	pods, _ := fx.cs.CoreV1().Pods("csi").List(ctx, metav1.ListOptions{})
	var targets []string
	for _, p := range pods.Items {
		n, err := targetNode(&p)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, n)
		if p.GenerateName != "node-plugin-" || !metav1.IsControlledBy(&p, ds) {
			t.Errorf("pod %s: generateName %q, owners %v", p.Name, p.GenerateName, p.OwnerReferences)
		}
		if p.Labels["app"] != "node" || p.Labels[templateGenerationLabel] != "1" || p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == "" {
			t.Errorf("pod %s labels %v", p.Name, p.Labels)
		}
		if len(p.Spec.Tolerations) != len(daemonTolerations) {
			t.Errorf("pod %s tolerations %v", p.Name, p.Spec.Tolerations)
		}
	}
	slices.Sort(targets)
	if !slices.Equal(targets, []string{"node-a", "node-c"}) {
		t.Errorf("pods for %v, want node-a and node-c (node-b's not-ready taint is not tolerated)", targets)
	}
	events := fx.reasons()
	if len(events) != 2 || !strings.HasPrefix(events[0], "Normal SuccessfulCreate Created pod: node-plugin-") {
		t.Errorf("events %q", events)
	}
	revs, _ := fx.cs.AppsV1().ControllerRevisions("csi").List(ctx, metav1.ListOptions{})
	if len(revs.Items) != 1 || revs.Items[0].Revision != 1 ||
		revs.Items[0].Name != "node-plugin-"+revs.Items[0].Labels[appsv1.DefaultDaemonSetUniqueLabelKey] {
		t.Errorf("revisions %+v", revs.Items)
	}
	got, _ := fx.cs.AppsV1().DaemonSets("csi").Get(ctx, "node-plugin", metav1.GetOptions{})
	// The status counts the pods in the caches, which the sync's own
	// creations reach only afterwards (as in the real controller).
	want := appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, NumberUnavailable: 2, ObservedGeneration: 1}
	if !reflect.DeepEqual(got.Status, want) {
		t.Errorf("status %+v, want %+v", got.Status, want)
	}
}

func TestSyncStatus(t *testing.T) {
	ds := daemonSet(func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"csi": "yes"} })
	hash := "h1"
	pod := func(name, nodeName string, ready bool, h string) *corev1.Pod {
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "csi", Labels: map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: h},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, dsKind)}},
			Spec:   corev1.PodSpec{NodeName: nodeName},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}},
		}
	}
	tests := []struct {
		name       string
		nodes      []*corev1.Node
		pods       []*corev1.Pod
		want       appsv1.DaemonSetStatus
		wantDelete []string
	}{
		{"selecting no nodes", []*corev1.Node{node("a", nil), node("b", nil)}, nil,
			appsv1.DaemonSetStatus{ObservedGeneration: 1}, nil},
		{"ready, not ready, misscheduled",
			[]*corev1.Node{node("a", map[string]string{"csi": "yes"}), node("b", map[string]string{"csi": "yes"}), node("c", nil)},
			[]*corev1.Pod{pod("p-a", "a", true, hash), pod("p-b", "b", false, "old"), pod("p-c", "c", true, hash)},
			appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, CurrentNumberScheduled: 2, NumberMisscheduled: 1, NumberReady: 1,
				UpdatedNumberScheduled: 1, NumberAvailable: 1, NumberUnavailable: 1, ObservedGeneration: 1},
			// p-c leaves the node it should not be on; p-b, old and not
			// available, is replaced by the rolling update.
			[]string{"p-c", "p-b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := ds.DeepCopy()
			ds.Spec.UpdateStrategy.Type = appsv1.RollingUpdateDaemonSetStrategyType
			objs := []runtime.Object{ds}
			for _, n := range tt.nodes {
				objs = append(objs, n)
			}
			for _, p := range tt.pods {
				objs = append(objs, p)
			}
			fx := newFixture(t, objs...)
			// The revision's hash is the template's; make the test pods'
			// "h1" the current one by taking the hash the controller uses.
			ctx := context.Background()
			h, err := fx.c.currentRevision(ctx, ds)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tt.pods {
				if p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash {
					p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = h
				}
			}
			if err := fx.c.sync(ctx, "csi/node-plugin"); err != nil {
				t.Fatal(err)
			}
			got, _ := fx.cs.AppsV1().DaemonSets("csi").Get(ctx, "node-plugin", metav1.GetOptions{})
			if !reflect.DeepEqual(got.Status, tt.want) {
				t.Errorf("status %+v, want %+v", got.Status, tt.want)
			}
			var deleted []string
			for _, a := range fx.cs.Actions() {
				if d, ok := a.(k8stesting.DeleteAction); ok && a.GetResource().Resource == "pods" {
					deleted = append(deleted, d.GetName())
				}
			}
			if !slices.Equal(deleted, tt.wantDelete) {
				t.Errorf("deleted %v, want %v", deleted, tt.wantDelete)
			}
		})
	}
}

func TestSelectingAllIsRefused(t *testing.T) {
	ds := daemonSet(nil)
	ds.Spec.Selector = &metav1.LabelSelector{}
	fx := newFixture(t, ds, node("a", nil))
	if err := fx.c.sync(context.Background(), "csi/node-plugin"); err != nil {
		t.Fatal(err)
	}
	want := []string{"Warning SelectingAll This daemon set is selecting all pods. A non-empty selector is required."}
	if got := fx.reasons(); !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if pods, _ := fx.cs.CoreV1().Pods("csi").List(context.Background(), metav1.ListOptions{}); len(pods.Items) != 0 {
		t.Errorf("%d pods made", len(pods.Items))
	}
}
