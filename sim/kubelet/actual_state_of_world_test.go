package kubelet

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// A pod stays in the actual state, with no volumes, until deletePod: the
// orphan clean-up leaves the directory of such a pod alone.
func TestActualStatePodOutlivesItsVolumes(t *testing.T) {
	var a actualState
	a.reset()
	a.markMounted("pod-2", "pv-b", &mountedVolume{unique: "b", pvName: "pv-b"})
	a.markMounted("pod-1", "pv-a", &mountedVolume{unique: "a", pvName: "pv-a", uncertain: true})
	if got := a.pods(); !slices.Equal(got, []types.UID{"pod-1", "pod-2"}) {
		t.Errorf("pods %v, want sorted", got)
	}
	if !a.hasUncertain("pod-1") || a.hasUncertain("pod-2") {
		t.Error("uncertain: want pod-1's volume only")
	}
	if !a.mountedForOtherPod("pod-1", "pv-b") || a.mountedForOtherPod("pod-2", "pv-b") {
		t.Error("pv-b is published for pod-2 only")
	}
	a.markUnmounted("pod-1", "pv-a")
	if a.mountedVolume("pod-1", "pv-a") != nil || !a.hasPod("pod-1") {
		t.Error("after its last unmount the pod has no volume but is still there")
	}
	a.deletePod("pod-1")
	if a.hasPod("pod-1") {
		t.Error("deletePod left the pod")
	}
}

func TestActualStateClaimSize(t *testing.T) {
	const u = corev1.UniqueVolumeName("kubernetes.io/csi/d^v")
	var a actualState
	a.reset()
	a.initializeClaimSize(u, resource.Quantity{}) // a claim without status.capacity yet
	a.initializeClaimSize(u, resource.MustParse("1Gi"))
	a.initializeClaimSize(u, resource.MustParse("2Gi")) // known: kept
	s, ok := a.size(u)
	if !ok || s.size.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Fatalf("size %s (known %v), want 1Gi", s.size.String(), ok)
	}
	a.updateSize(u, func(s *actualSize) { s.size, s.inUseError = resource.MustParse("3Gi"), true })
	if s, _ := a.size(u); s.size.Cmp(resource.MustParse("3Gi")) != 0 || !s.inUseError {
		t.Errorf("after the update %+v", s)
	}
	a.markFinalExpansionError(u)
	a.forgetSize(u)
	if _, ok := a.size(u); ok || !a.hasFinalExpansionError(u) {
		t.Error("forgetSize drops the size, not the final expansion error")
	}
	a.reset()
	if a.hasFinalExpansionError(u) || len(a.stagedVolumes()) != 0 || len(a.pods()) != 0 {
		t.Error("a reset state still has something")
	}
}
