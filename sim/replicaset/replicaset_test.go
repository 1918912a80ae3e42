package replicaset

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

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

func testRS(replicas int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Namespace: "default", UID: "rs-uid", Generation: 2},
		Spec: appsv1.ReplicaSetSpec{Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}},
	}
}

func ownedPod(rs *appsv1.ReplicaSet, name, node string, phase corev1.PodPhase, ready bool, age time.Duration) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"},
			CreationTimestamp: metav1.NewTime(time.Unix(10000, 0).Add(-age)),
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(rs, rsKind)}},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: phase, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
}

func TestSync(t *testing.T) {
	tests := []struct {
		name       string
		replicas   int32
		pods       func(rs *appsv1.ReplicaSet) []*corev1.Pod
		wantPods   int      // pods left in the API
		wantEvents []string // reasons
		wantStatus appsv1.ReplicaSetStatus
	}{
		{"makes the missing pods", 2, func(*appsv1.ReplicaSet) []*corev1.Pod { return nil }, 2,
			[]string{"SuccessfulCreate", "SuccessfulCreate"}, appsv1.ReplicaSetStatus{ObservedGeneration: 2}},
		{"a finished pod does not count", 1, func(rs *appsv1.ReplicaSet) []*corev1.Pod {
			return []*corev1.Pod{ownedPod(rs, "web-abc-done", "n", corev1.PodSucceeded, false, time.Hour)}
		}, 2, []string{"SuccessfulCreate"}, appsv1.ReplicaSetStatus{ObservedGeneration: 2}},
		{"deletes the surplus, least far along first", 1, func(rs *appsv1.ReplicaSet) []*corev1.Pod {
			return []*corev1.Pod{
				ownedPod(rs, "web-abc-ready", "n", corev1.PodRunning, true, time.Hour),
				ownedPod(rs, "web-abc-pending", "", corev1.PodPending, false, time.Minute),
			}
		}, 1, []string{"SuccessfulDelete"}, appsv1.ReplicaSetStatus{Replicas: 2, FullyLabeledReplicas: 2, ReadyReplicas: 1,
			AvailableReplicas: 1, ObservedGeneration: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := testRS(tt.replicas)
			objs := []runtime.Object{rs}
			pods := tt.pods(rs)
			for _, p := range pods {
				objs = append(objs, p)
			}
			cs := fake.NewClientset(objs...)
			// The fake clientset does not generate names; the API server does.
			n := 0
			cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if p, ok := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod); ok && p.Name == "" {
					n++
					p.Name = fmt.Sprintf("%s%d", p.GenerateName, n)
				}
				return false, nil, nil
			})
			f := informers.NewSharedInformerFactory(cs, 0)
			events := record.NewFakeRecorder(10)
			rt := controller.Runtime{Clock: clock.RealClock{}, NewQueue: controller.NewQueue,
				NewEventRecorder: func(kubernetes.Interface, string, string) (record.EventRecorder, func()) { return events, func() {} }}
			c := New(cs, f, rt)
			if err := f.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(rs); err != nil {
				t.Fatal(err)
			}
			for _, p := range pods {
				if err := f.Core().V1().Pods().Informer().GetIndexer().Add(p); err != nil {
					t.Fatal(err)
				}
			}
			ctx := context.Background()
			if err := c.sync(ctx, "default/web-abc"); err != nil {
				t.Fatal(err)
			}
			list, _ := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
			if len(list.Items) != tt.wantPods {
				t.Errorf("%d pods, want %d", len(list.Items), tt.wantPods)
			}
			for _, p := range list.Items {
				if p.Name == "web-abc-pending" {
					t.Error("the pending pod was kept over the ready one")
				}
				if p.GenerateName != "" && p.GenerateName != "web-abc-" {
					t.Errorf("generateName %q", p.GenerateName)
				}
			}
			var reasons []string
			for len(events.Events) > 0 {
				e := <-events.Events
				reasons = append(reasons, splitReason(e))
			}
			if !slices.Equal(reasons, tt.wantEvents) {
				t.Errorf("events %v, want %v", reasons, tt.wantEvents)
			}
			got, _ := cs.AppsV1().ReplicaSets("default").Get(ctx, "web-abc", metav1.GetOptions{})
			if !reflect.DeepEqual(got.Status, tt.wantStatus) {
				t.Errorf("status %+v, want %+v", got.Status, tt.wantStatus)
			}
		})
	}
}

// splitReason is the reason of a fake recorder's "Type Reason message".
func splitReason(e string) string {
	if f := strings.SplitN(e, " ", 3); len(f) > 1 {
		return f[1]
	}
	return ""
}
