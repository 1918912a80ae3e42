package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/sim/controller"
)

// TestGenericEphemeralClaims: the volume binding plugin's PreFilter
// (podHasPVCs) for a generic ephemeral volume's claim <pod>-<volume>.
func TestGenericEphemeralClaims(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", UID: "pod-uid"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{
			Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{}}}}}}}
	isTrue := true
	claim := func(o owner) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "app-scratch", Namespace: "default"},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}}
		if o != "" {
			c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "app", UID: o.uid(), Controller: &isTrue}}
		}
		return c
	}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}}
	for _, tc := range []struct {
		name  string
		claim *corev1.PersistentVolumeClaim
		why   string
	}{
		{"not created yet", nil, `waiting for ephemeral volume controller to create the persistentvolumeclaim "app-scratch"`},
		{"not the pod's", claim(""), "PVC default/app-scratch was not created for pod default/app (pod is not owner)"},
		{"another pod's of that name", claim("old"), "PVC default/app-scratch was not created for pod default/app (pod is not owner)"},
		{"the pod's", claim("mine"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset()
			factory := informers.NewSharedInformerFactory(cs, 0)
			rt := controller.Runtime{Clock: clock.RealClock{}, NewQueue: controller.NewQueue,
				NewEventRecorder: func(kubernetes.Interface, string, string) (record.EventRecorder, func()) {
					return record.NewFakeRecorder(10), func() {}
				}}
			s := New(cs, factory, rt)
			if err := factory.Core().V1().PersistentVolumes().Informer().GetIndexer().Add(pv); err != nil {
				t.Fatal(err)
			}
			if tc.claim != nil {
				if err := factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(tc.claim); err != nil {
					t.Fatal(err)
				}
			}
			vols, why := s.podVolumes(pod)
			if why != tc.why {
				t.Errorf("why %q, want %q", why, tc.why)
			}
			if tc.why == "" && (len(vols.bound) != 1 || vols.bound[0].Name != "pv-1") {
				t.Errorf("bound %v, want pv-1", vols.bound)
			}
			if !usesClaim(pod, "app-scratch") {
				t.Error("the pod does not use its ephemeral claim")
			}
		})
	}
}

// owner names a claim's owner: "mine" is the pod itself.
type owner string

func (o owner) uid() types.UID {
	if o == "mine" {
		return "pod-uid"
	}
	return types.UID(o)
}
