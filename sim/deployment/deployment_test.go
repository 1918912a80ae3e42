package deployment

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/csisim/csisim/sim/controller"
)

func testDeployment(replicas int32, strategy appsv1.DeploymentStrategyType) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "d-uid", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas, ProgressDeadlineSeconds: ptr(int32(600)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Strategy: appsv1.DeploymentStrategy{Type: strategy},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}},
		},
	}
	if strategy == appsv1.RollingUpdateDeploymentStrategyType {
		d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{
			MaxSurge: ptr(intstr.FromString("25%")), MaxUnavailable: ptr(intstr.FromString("25%"))}
	}
	return d
}

func ptr[T any](v T) *T { return &v }

func TestPodTemplateHash(t *testing.T) {
	d := testDeployment(1, appsv1.RollingUpdateDeploymentStrategyType)
	a := PodTemplateHash(&d.Spec.Template, nil)
	if again := PodTemplateHash(d.Spec.Template.DeepCopy(), nil); again != a {
		t.Errorf("not deterministic: %s, %s", a, again)
	}
	if c := PodTemplateHash(&d.Spec.Template, ptr(int32(1))); c == a {
		t.Error("the collision count does not change the hash")
	}
	changed := d.Spec.Template.DeepCopy()
	changed.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": "node-b"}
	if c := PodTemplateHash(changed, nil); c == a {
		t.Error("a changed template has the same hash")
	}
	if strings.ContainsAny(a, "aeiou013") {
		t.Errorf("hash %s is not rendered with the safe alphabet", a)
	}
}

func TestFenceposts(t *testing.T) {
	tests := []struct {
		replicas         int32
		surge, unavail   intstr.IntOrString
		wantS, wantU     int32
		strategy         appsv1.DeploymentStrategyType
		wantNewRSInitial int32 // replicas of a new ReplicaSet beside an old one of all replicas
	}{
		{1, intstr.FromString("25%"), intstr.FromString("25%"), 1, 0, appsv1.RollingUpdateDeploymentStrategyType, 1},
		{4, intstr.FromString("25%"), intstr.FromString("25%"), 1, 1, appsv1.RollingUpdateDeploymentStrategyType, 1},
		{10, intstr.FromString("25%"), intstr.FromString("25%"), 3, 2, appsv1.RollingUpdateDeploymentStrategyType, 3},
		{3, intstr.FromInt32(0), intstr.FromInt32(0), 0, 1, appsv1.RollingUpdateDeploymentStrategyType, 0},
		{3, intstr.FromInt32(0), intstr.FromInt32(0), 0, 0, appsv1.RecreateDeploymentStrategyType, 3},
	}
	for _, tt := range tests {
		d := testDeployment(tt.replicas, tt.strategy)
		if d.Spec.Strategy.RollingUpdate != nil {
			d.Spec.Strategy.RollingUpdate.MaxSurge, d.Spec.Strategy.RollingUpdate.MaxUnavailable = &tt.surge, &tt.unavail
		}
		if s, u := maxSurge(d), maxUnavailable(d); s != tt.wantS || u != tt.wantU {
			t.Errorf("%d replicas %s/%s %s: surge %d unavailable %d, want %d %d", tt.replicas, tt.surge.String(), tt.unavail.String(),
				tt.strategy, s, u, tt.wantS, tt.wantU)
		}
		old := &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Replicas: ptr(tt.replicas)}}
		newRS := &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(0))}}
		if got := newRSNewReplicas(d, []*appsv1.ReplicaSet{old, newRS}, newRS); got != tt.wantNewRSInitial {
			t.Errorf("%d replicas %s: new ReplicaSet starts at %d, want %d", tt.replicas, tt.strategy, got, tt.wantNewRSInitial)
		}
	}
}

type rig struct {
	c      *Controller
	cs     *fake.Clientset
	f      informers.SharedInformerFactory
	events *record.FakeRecorder
}

func newRig(t *testing.T, objs ...runtime.Object) *rig {
	cs := fake.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(cs, 0)
	events := record.NewFakeRecorder(100)
	rt := controller.Runtime{Clock: testingclock.NewFakeClock(time.Unix(1000, 0)), NewQueue: controller.NewQueue,
		NewEventRecorder: func(kubernetes.Interface, string, string) (record.EventRecorder, func()) { return events, func() {} }}
	r := &rig{c: New(cs, f, rt), cs: cs, f: f, events: events}
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *appsv1.Deployment:
			err = f.Apps().V1().Deployments().Informer().GetIndexer().Add(o)
		case *appsv1.ReplicaSet:
			err = f.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(o)
		case *corev1.Pod:
			err = f.Core().V1().Pods().Informer().GetIndexer().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func (r *rig) eventMessages() []string {
	var out []string
	for len(r.events.Events) > 0 {
		out = append(out, <-r.events.Events)
	}
	return out
}

// oldRS is a ReplicaSet of the deployment's template before a change,
// all its replicas available.
func oldRS(d *appsv1.Deployment, replicas int32) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-old", Namespace: "default", UID: "old-uid",
			Annotations:     map[string]string{RevisionAnnotation: "1"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, deploymentKind)}},
		Spec:   appsv1.ReplicaSetSpec{Replicas: ptr(replicas), Template: *d.Spec.Template.DeepCopy()},
		Status: appsv1.ReplicaSetStatus{Replicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas},
	}
	rs.Spec.Template.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": "node-a"}
	return rs
}

func TestFirstSyncMakesTheReplicaSet(t *testing.T) {
	d := testDeployment(2, appsv1.RollingUpdateDeploymentStrategyType)
	r := newRig(t, d)
	ctx := context.Background()
	if err := r.c.sync(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	hash := PodTemplateHash(&d.Spec.Template, nil)
	rs, err := r.cs.AppsV1().ReplicaSets("default").Get(ctx, "web-"+hash, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *rs.Spec.Replicas != 2 || rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash ||
		rs.Spec.Selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] != hash ||
		rs.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash {
		t.Errorf("replicaset %+v", rs)
	}
	for k, v := range map[string]string{RevisionAnnotation: "1", DesiredReplicasAnnotation: "2", MaxReplicasAnnotation: "3"} {
		if rs.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, rs.Annotations[k], v)
		}
	}
	if got := r.eventMessages(); !slices.Equal(got, []string{"Normal ScalingReplicaSet Scaled up replica set web-" + hash + " from 0 to 2"}) {
		t.Errorf("events %q", got)
	}
	got, _ := r.cs.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
	if c := condition(got.Status, appsv1.DeploymentProgressing); c == nil || c.Reason != NewReplicaSetReason ||
		c.Message != `Created new replica set "web-`+hash+`"` {
		t.Errorf("progressing %+v", c)
	}
	if got.Annotations[RevisionAnnotation] != "1" {
		t.Errorf("deployment revision %q", got.Annotations[RevisionAnnotation])
	}
}

func TestRollouts(t *testing.T) {
	tests := []struct {
		name     string
		strategy appsv1.DeploymentStrategyType
		replicas int32
		// newAvailable: the new ReplicaSet (when there) has this many
		// available replicas.
		oldPodLeft bool
		wantOld    int32
		wantNew    int32 // -1: no new ReplicaSet
	}{
		{"rolling, one replica: surge one, old stays", appsv1.RollingUpdateDeploymentStrategyType, 1, false, 1, 1},
		{"rolling, four replicas: surge one and one old down in the same sync", appsv1.RollingUpdateDeploymentStrategyType, 4, false, 3, 1},
		{"recreate: old scaled to zero first, no new yet", appsv1.RecreateDeploymentStrategyType, 2, true, 0, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := testDeployment(tt.replicas, tt.strategy)
			old := oldRS(d, tt.replicas)
			objs := []runtime.Object{d, old}
			if tt.oldPodLeft {
				objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-old-x", Namespace: "default",
					OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(old, rsKind)}},
					Status: corev1.PodStatus{Phase: corev1.PodRunning}})
			}
			r := newRig(t, objs...)
			ctx := context.Background()
			if err := r.c.sync(ctx, "default/web"); err != nil {
				t.Fatal(err)
			}
			gotOld, _ := r.cs.AppsV1().ReplicaSets("default").Get(ctx, "web-old", metav1.GetOptions{})
			if *gotOld.Spec.Replicas != tt.wantOld {
				t.Errorf("old replicas %d, want %d", *gotOld.Spec.Replicas, tt.wantOld)
			}
			newRS, err := r.cs.AppsV1().ReplicaSets("default").Get(ctx, "web-"+PodTemplateHash(&d.Spec.Template, nil), metav1.GetOptions{})
			switch {
			case tt.wantNew < 0 && err == nil:
				t.Errorf("a new ReplicaSet %s was made", newRS.Name)
			case tt.wantNew >= 0 && err != nil:
				t.Errorf("no new ReplicaSet: %v", err)
			case tt.wantNew >= 0 && *newRS.Spec.Replicas != tt.wantNew:
				t.Errorf("new replicas %d, want %d", *newRS.Spec.Replicas, tt.wantNew)
			case tt.wantNew >= 0 && newRS.Annotations[RevisionAnnotation] != "2":
				t.Errorf("new revision %q, want 2", newRS.Annotations[RevisionAnnotation])
			}
		})
	}
}

func TestProgressDeadline(t *testing.T) {
	d := testDeployment(1, appsv1.RollingUpdateDeploymentStrategyType)
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	c := &Controller{clock: clk}
	start := metav1.NewTime(clk.Now())
	d.Status = appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 1, AvailableReplicas: 1, ObservedGeneration: 1,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue,
			Reason: ReplicaSetUpdatedReason, LastUpdateTime: start, LastTransitionTime: start}}}
	s := d.Status
	if c.timedOut(d, &s) {
		t.Error("timed out at once")
	}
	if after := c.requeueAfter(d, s); after != 600*time.Second {
		t.Errorf("requeue after %s, want 10m", after)
	}
	clk.Step(601 * time.Second)
	if !c.timedOut(d, &s) {
		t.Error("not timed out after the deadline")
	}
}
