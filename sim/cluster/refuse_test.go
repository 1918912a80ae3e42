package cluster

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestRefusals: a DaemonSet is refused unless the cluster runs the
// DaemonSet controller; the deployment's objects and what their
// controllers make pass although their pods have hostPath volumes, which a
// scenario's own pod does not.
func TestRefusals(t *testing.T) {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "node", UID: "ds"}}
	dsGVK := appsv1.SchemeGroupVersion.WithKind("DaemonSet")
	podGVK := corev1.SchemeGroupVersion.WithKind("Pod")
	hostPathPod := func(uid string, owner *appsv1.DaemonSet) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: types.UID("p-" + uid)}, Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "dir", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/kubelet"}}}}}}
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, dsGVK)}
		}
		return p
	}

	off := &refusals{}
	if errs := off.check(dsGVK, ds, nil); len(errs) == 0 {
		t.Error("a DaemonSet passed a cluster without the DaemonSet controller")
	}
	on := &refusals{daemonSets: true}
	if errs := on.check(dsGVK, ds, nil); len(errs) != 0 {
		t.Errorf("a DaemonSet refused where the controller runs: %v", errs)
	}
	if errs := on.check(podGVK, hostPathPod("mine", nil), nil); len(errs) == 0 {
		t.Error("a scenario's hostPath pod passed")
	}
	if err := on.applying(func() error {
		if errs := on.check(dsGVK, ds, nil); len(errs) != 0 {
			t.Errorf("the deployment's DaemonSet refused: %v", errs)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if errs := on.check(podGVK, hostPathPod("daemon", ds), nil); len(errs) != 0 {
		t.Errorf("the deployment DaemonSet's pod refused: %v", errs)
	}
	if errs := on.check(podGVK, hostPathPod("stranger", &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "x", UID: "x"}}), nil); len(errs) == 0 {
		t.Error("a pod of a DaemonSet not of the deployment passed with its hostPath volume")
	}
}
