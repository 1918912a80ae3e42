package diff

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func rsPod(name string, created time.Time) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", GenerateName: "web-5d4f-",
		UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(created),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d4f", Controller: ptrTo(true)}}}}
}

func ptrTo[T any](v T) *T { return &v }

// Two clusters whose ReplicaSet pods got different random suffixes
// compare equal, the pods named by their place among the ReplicaSet's.
func TestReplicaSetPodsGetPlaceholders(t *testing.T) {
	t0 := time.Unix(1000, 0)
	snap := func(first, second string) Snapshot {
		n := NewNormaliser()
		objs := Objects{Pods: []corev1.Pod{rsPod(second, t0.Add(time.Second)), rsPod(first, t0)},
			Events: []corev1.Event{{InvolvedObject: corev1.ObjectReference{Kind: "ReplicaSet", Namespace: "default", Name: "web-5d4f"},
				Reason: "SuccessfulCreate", Message: "Created pod: " + first}},
			Workloads: Workloads{ReplicaSets: []appsv1.ReplicaSet{{ObjectMeta: metav1.ObjectMeta{Name: "web-5d4f", Namespace: "default"}}}}}
		return n.Snapshot(objs, nil)
	}
	a, b := snap("web-5d4f-abcde", "web-5d4f-fghij"), snap("web-5d4f-zzzzz", "web-5d4f-xxxxx")
	if !a.Equal(b) {
		t.Fatalf("snapshots differ:\n%v\n%v", a.Objects, b.Objects)
	}
	if _, ok := a.Objects["Pod <pod 1 of replicaset default/web-5d4f>"]; !ok {
		t.Errorf("objects %v", a.Objects)
	}
	rs := a.Objects["ReplicaSet default/web-5d4f"]
	if m := rs.Events["SuccessfulCreate"].Messages; len(m) != 1 || m[0] != "Created pod: <pod 1 of replicaset default/web-5d4f>" {
		t.Errorf("replicaset events %v", rs.Events)
	}
}

// A pod that appears after the normaliser has named other things is named
// in messages too, not only as an object (a later step of a rollout).
func TestReplicaSetPodNamedInLaterMessages(t *testing.T) {
	t0 := time.Unix(1000, 0)
	n := NewNormaliser()
	rs := Workloads{ReplicaSets: []appsv1.ReplicaSet{{ObjectMeta: metav1.ObjectMeta{Name: "web-5d4f", Namespace: "default"}}}}
	first := rsPod("web-5d4f-abcde", t0)
	n.Snapshot(Objects{Pods: []corev1.Pod{first}, Workloads: rs,
		Events: []corev1.Event{{InvolvedObject: corev1.ObjectReference{Kind: "ReplicaSet", Namespace: "default", Name: "web-5d4f"},
			Reason: "SuccessfulCreate", Message: "Created pod: " + first.Name}}}, nil)
	second := rsPod("web-5d4f-fghij", t0.Add(time.Second))
	s := n.Snapshot(Objects{Pods: []corev1.Pod{first, second}, Workloads: rs,
		Events: []corev1.Event{{InvolvedObject: corev1.ObjectReference{Kind: "ReplicaSet", Namespace: "default", Name: "web-5d4f"},
			Reason: "SuccessfulCreate", Message: "Created pod: " + second.Name}}}, nil)
	want := "Created pod: <pod 2 of replicaset default/web-5d4f>"
	if m := s.Objects["ReplicaSet default/web-5d4f"].Events["SuccessfulCreate"].Messages; len(m) != 1 || m[0] != want {
		t.Errorf("messages %q, want %q", m, want)
	}
}
